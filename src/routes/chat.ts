// chat.*: a user's assistant threads and their messages, answered whole or streamed as server-sent events, and the
// assistant's proposals, which only their user can run (confirm) or dismiss (reject).
import type { Conversation } from '../chat/conversation.ts';
import { keyQueue } from '../chat/key-queue.ts';
import { streamReply } from '../chat/reply-stream.ts';
import type { ToolTurn } from '../chat/tool.ts';
import { proposingTool } from '../chat/tools.ts';
import { ACTION_KINDS } from '../domain/chat.ts';
import type { ChatAction, ChatRepository } from '../db/chat.ts';
import type { AuthUser } from '../domain/auth-user.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import type { Context } from '../http/context.ts';
import type { Logger } from '../http/logger.ts';
import { operation, STREAMED } from '../http/operation.ts';
import type { RunOperation } from '../http/run-operation.ts';
import type { LanguageModel } from '../llm/model.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import {
  ActionParams,
  ConfirmReply,
  MessageInput,
  MessageList,
  RejectReply,
  SendReply,
  StreamEvent,
  Thread,
  ThreadInput,
  ThreadListQuery,
  ThreadPage,
} from '../schemas/chat.ts';

export interface ChatDeps {
  chats: ChatRepository;
  conversation: Conversation;
  model: LanguageModel;
  clock: Clock;
  logger: Logger;
  /** CHAT_HEARTBEAT_MS: a `: keep-alive` comment after this long without a frame. */
  heartbeatMs: number;
  /** Runs a direct operation as a user: what a confirmed proposal does. */
  run: RunOperation;
}

/** What confirming runs, in words: "`save_segment` as segments.create, …", from the write tools themselves. */
const CONFIRM_RUNS = ACTION_KINDS.map((kind) => `\`${kind}\` as ${proposingTool(kind).operationId}`).join(', ');

/** A proposal as the API shows it, without the stored result. */
const shown = ({ result: _, ...action }: ChatAction & { result?: unknown }): ChatAction => action;

/** What confirming answers: the proposal, now confirmed, and what its operation answered. */
type Confirmed = { action: ChatAction; result: unknown };

/** A confirm under way: what it will answer, and the signal of the request running it. */
type ConfirmRun = { answer: Promise<Confirmed>; signal: AbortSignal };

/** What a confirm finds: the stored answer, a run of this process (its own or another request's), or another instance's run. */
type FoundConfirm = { stored: Confirmed } | { run: ConfirmRun; own: boolean } | { elsewhere: true };

/** The conflict of rejecting a proposal that is confirmed or being confirmed. */
const confirmedAlready = () => new AppError('conflict', 'This proposal was confirmed already; it cannot be rejected.');

const NOT_YOURS = 'Threads are private: one that belongs to another user is not found, like one that does not exist.';

/** Returns the chat operations. */
export function chatOperations({ chats, conversation, model, clock, logger, heartbeatMs, run }: ChatDeps) {
  /**
   * Confirms under way, by proposal id, with the signal of the request running each: a second confirm meanwhile
   * waits for the first and answers the same, or runs it itself when the first one's client leaves.
   */
  const confirming = new Map<string, ConfirmRun>();
  /**
   * The steps on one proposal that read it and act on what they read (confirm, reject, storing a confirm), one at a
   * time per proposal id: the repository is asynchronous, and a write landing between a read and the decision made
   * from it would run a proposal twice, or reject one that was just confirmed.
   */
  const proposals = keyQueue();

  /** A turn's tools run the route table's operations as the user, on behalf of this request. */
  const toolTurn = (user: AuthUser, ctx: Context): ToolTurn => ({ signal: ctx.signal, run: (operationId, input) => run(operationId, { ...input, user, ctx }) });

  const createThread = operation({
    operationId: 'chat.threads.create',
    summary: 'Start a thread. Without a title it is "New conversation" until its first message names it.',
    tag: 'chat',
    body: ThreadInput,
    response: Thread,
    async handle({ body, user }) {
      return await chats.createThread(user.id, body.title, clock());
    },
  });

  const listThreads = operation({
    operationId: 'chat.threads.list',
    summary: "Your threads, most recently updated first, in pages. Other users' threads are never listed.",
    tag: 'chat',
    query: ThreadListQuery,
    response: ThreadPage,
    async handle({ query, user }) {
      return { ...(await chats.listThreads(user.id, query.page, query.limit)), page: query.page, limit: query.limit };
    },
  });

  const getThread = operation({
    operationId: 'chat.threads.get',
    summary: `One of your threads. ${NOT_YOURS}`,
    tag: 'chat',
    params: IdParams,
    response: Thread,
    problems: ['not_found'],
    async handle({ params, user }) {
      return await chats.getThread(user.id, params.id);
    },
  });

  const deleteThread = operation({
    operationId: 'chat.threads.delete',
    summary: 'Delete one of your threads together with its messages.',
    tag: 'chat',
    // No params schema: the router only matches a non-empty id, so nothing here can fail validation, and the
    // documented problems stay exactly those product.md names for this operation (401, 404, 500).
    response: NullBody,
    problems: ['not_found'],
    async handle({ user, ctx }) {
      await chats.deleteThread(user.id, ctx.params.id!);
      return null;
    },
  });

  const listMessages = operation({
    operationId: 'chat.messages.list',
    summary: 'The messages of one of your threads, oldest first.',
    tag: 'chat',
    params: IdParams,
    response: MessageList,
    problems: ['not_found'],
    async handle({ params, user }) {
      return await chats.listMessages(user.id, params.id);
    },
  });

  const send = operation({
    operationId: 'chat.messages.send',
    summary:
      'Ask the assistant and wait for the whole reply. Both messages are stored together once the reply is there; a failed reply stores nothing, so a retry does not duplicate the question. ' +
      'A reply cut at the token budget (LLM_MAX_TOKENS) is stored and returned with `truncated: true`.',
    tag: 'chat',
    params: IdParams,
    body: MessageInput,
    response: SendReply,
    problems: ['not_found', 'llm_error', 'llm_unavailable'],
    async handle({ params, body, user, ctx }) {
      const thread = await chats.getThread(user.id, params.id);
      const request = await conversation.request(thread.id, body.content, ctx.signal);
      const ignore = async () => true;
      const turn = await conversation.turn(request, toolTurn(user, ctx), { text: ignore, proposal: ignore });
      if (!turn) throw ctx.signal.reason;
      const reply = conversation.settle(turn);
      const [userMessage, assistantMessage] = await chats.addMessages(
        user.id,
        thread.id,
        [
          { role: 'user', content: body.content },
          { role: 'assistant', ...reply, model: model.model },
        ],
        clock(),
      );
      return { userMessage, assistantMessage };
    },
  });

  const stream = operation({
    operationId: 'chat.messages.stream',
    summary:
      'Ask the assistant and receive the reply as server-sent events: `start`, `delta`s, then `done` with the stored message, or a last `error`. ' +
      'The question is stored before the stream starts, the reply only once complete; a reply cut at the token budget is stored with `truncated: true`, also on `done`. ' +
      'A `: keep-alive` comment comes every 15 s (CHAT_HEARTBEAT_MS) of silence. ' +
      'Disconnecting stops the model.',
    tag: 'chat',
    params: IdParams,
    body: MessageInput,
    response: StreamEvent,
    events: StreamEvent,
    problems: ['not_found'],
    async handle({ params, body, user, ctx }) {
      const thread = await chats.getThread(user.id, params.id);
      const request = await conversation.request(thread.id, body.content, ctx.signal);
      ctx.signal.throwIfAborted(); // a client already gone gets no stored question
      const [userMessage] = await chats.addMessages(user.id, thread.id, [{ role: 'user', content: body.content }], clock());
      await streamReply({
        ctx,
        heartbeatMs,
        logger,
        threadId: thread.id,
        userMessageId: userMessage!.id,
        turn: (out) => conversation.turn(request, toolTurn(user, ctx), out),
        store: async (turn) => (await chats.addMessages(user.id, thread.id, [{ role: 'assistant', ...conversation.settle(turn), model: model.model }], clock()))[0]!,
      });
      return STREAMED;
    },
  });

  const confirmAction = operation({
    operationId: 'chat.actions.confirm',
    summary:
      `Run a proposal of the assistant as yourself: ${CONFIRM_RUNS}, with their validation, roles and limits. ` +
      'Answers the proposal (now `confirmed`, with `resultId`) and what the operation answered; confirming again answers the same and makes nothing more.',
    description: `${NOT_YOURS} A rejected proposal cannot be confirmed (409). A failure (the segment deleted meanwhile, the rate limit, the model) leaves it proposed.`,
    tag: 'chat',
    params: ActionParams,
    response: ConfirmReply,
    problems: ['not_found', 'conflict', 'rate_limited', 'llm_error', 'llm_unavailable'],
    async handle({ params, user, ctx }) {
      for (;;) {
        const found = await proposals(params.actionId, () => findConfirm(params.id, params.actionId, user, ctx));
        if ('stored' in found) return found.stored;
        if ('elsewhere' in found) {
          // Another instance runs it: once it has stored the outcome (answered as stored) or let go (its run failed, or
          // its lease ended: then this one runs it), look again.
          await chats.whileConfirmingElsewhere(params.actionId, ctx.signal);
          continue;
        }
        try {
          return await found.run.answer;
        } catch (error) {
          // Another request's confirm failed because its client left: this one runs it, unless it has left too.
          if (found.own || !found.run.signal.aborted || ctx.signal.aborted) throw error;
        }
      }
    },
  });

  /**
   * What a confirm finds (one step of the proposal's queue): the stored answer, a run of this process to wait for,
   * started by it or another request, or another instance running it.
   */
  async function findConfirm(threadId: string, actionId: string, user: AuthUser, ctx: Context): Promise<FoundConfirm> {
    const action = await chats.getAction(user.id, threadId, actionId);
    if (action.status === 'confirmed') return { stored: { action: shown(action), result: action.result } };
    if (action.status === 'rejected') throw new AppError('conflict', 'This proposal was rejected; ask the assistant for a new one.');
    const pending = confirming.get(action.id);
    if (pending) return { run: pending, own: false };
    const claim = await chats.claimConfirm(action.id);
    if (claim === 'elsewhere') return { elsewhere: true };
    // Settled by another instance since it was read: read it again, now confirmed or rejected.
    if (claim === 'settled') return findConfirm(threadId, actionId, user, ctx);
    return { run: confirmNow(threadId, action, user, ctx), own: true };
  }

  /** Starts running a proposal's operation as the user and storing what it answered; a confirm meanwhile waits for it. */
  function confirmNow(threadId: string, action: ChatAction, user: AuthUser, ctx: Context): ConfirmRun {
    const answer = (async () => {
      try {
        const result = (await run(proposingTool(action.kind).operationId, { user, body: action.input, ctx })) as { id: string };
        // Stored and no longer under way in one step of the queue: the next step reads it confirmed.
        return await proposals(action.id, async () => {
          const settled = await chats.settleAction(user.id, threadId, action.id, { status: 'confirmed', result, resultId: result.id }, clock());
          confirming.delete(action.id);
          return { action: shown(settled), result: settled.result };
        });
      } catch (error) {
        // Still under way here, so no confirm of this process claims it meanwhile: another instance may now run it.
        await chats.releaseConfirm(action.id).catch((releaseError: unknown) => logger.error('releasing a confirm failed', { actionId: action.id, error: String(releaseError) }));
        throw error;
      } finally {
        confirming.delete(action.id);
      }
    })();
    void answer.catch(() => undefined); // its own request awaits it; this only keeps it handled until then
    const started = { answer, signal: ctx.signal };
    confirming.set(action.id, started);
    return started;
  }

  const rejectAction = operation({
    operationId: 'chat.actions.reject',
    summary: 'Dismiss a proposal of the assistant: it becomes `rejected` and can no longer be confirmed. Rejecting again answers the same.',
    description: `${NOT_YOURS} A confirmed proposal, or one being confirmed, cannot be rejected (409).`,
    tag: 'chat',
    params: ActionParams,
    response: RejectReply,
    problems: ['not_found', 'conflict'],
    async handle({ params, user }) {
      return await proposals(params.actionId, async () => {
        const action = await chats.getAction(user.id, params.id, params.actionId);
        if (action.status === 'confirmed' || confirming.has(action.id)) throw confirmedAlready();
        const settled = await chats.settleAction(user.id, params.id, action.id, { status: 'rejected' }, clock());
        // Another instance is confirming it, or has just confirmed it: it stays as that leaves it.
        if (settled.status !== 'rejected') throw confirmedAlready();
        return { action: shown(settled) };
      });
    },
  });

  return { createThread, listThreads, getThread, deleteThread, listMessages, send, stream, confirmAction, rejectAction };
}
