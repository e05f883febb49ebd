// chat.*: a user's assistant threads and their messages, answered whole or streamed as server-sent events.
import type { Conversation } from '../chat/conversation.ts';
import { streamReply } from '../chat/reply-stream.ts';
import type { ChatRepository } from '../db/chat.ts';
import type { Clock } from '../domain/clock.ts';
import type { Logger } from '../http/logger.ts';
import { operation, STREAMED } from '../http/operation.ts';
import type { LanguageModel } from '../llm/model.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import { MessageInput, MessageList, SendReply, StreamEvent, Thread, ThreadInput, ThreadListQuery, ThreadPage } from '../schemas/chat.ts';

export interface ChatDeps {
  chats: ChatRepository;
  conversation: Conversation;
  model: LanguageModel;
  clock: Clock;
  logger: Logger;
  /** CHAT_HEARTBEAT_MS: a `: keep-alive` comment after this long without a frame. */
  heartbeatMs: number;
}

const NOT_YOURS = 'Threads are private: one that belongs to another user is not found, like one that does not exist.';

/** Returns the chat operations. */
export function chatOperations({ chats, conversation, model, clock, logger, heartbeatMs }: ChatDeps) {
  const createThread = operation({
    operationId: 'chat.threads.create',
    summary: 'Start a thread. Without a title it is "New conversation" until its first message names it.',
    tag: 'chat',
    body: ThreadInput,
    response: Thread,
    handle({ body, user }) {
      return chats.createThread(user.id, body.title, clock());
    },
  });

  const listThreads = operation({
    operationId: 'chat.threads.list',
    summary: "Your threads, most recently updated first, in pages. Other users' threads are never listed.",
    tag: 'chat',
    query: ThreadListQuery,
    response: ThreadPage,
    handle({ query, user }) {
      return { ...chats.listThreads(user.id, query.page, query.limit), page: query.page, limit: query.limit };
    },
  });

  const getThread = operation({
    operationId: 'chat.threads.get',
    summary: `One of your threads. ${NOT_YOURS}`,
    tag: 'chat',
    params: IdParams,
    response: Thread,
    problems: ['not_found'],
    handle({ params, user }) {
      return chats.getThread(user.id, params.id);
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
    handle({ user, ctx }) {
      chats.deleteThread(user.id, ctx.params.id!);
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
    handle({ params, user }) {
      return chats.listMessages(user.id, params.id);
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
      const thread = chats.getThread(user.id, params.id);
      const reply = conversation.settle(await model.complete(conversation.request(thread.id, body.content, ctx.signal)));
      const [userMessage, assistantMessage] = chats.addMessages(
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
      const thread = chats.getThread(user.id, params.id);
      const request = conversation.request(thread.id, body.content, ctx.signal);
      ctx.signal.throwIfAborted(); // a client already gone gets no stored question
      const [userMessage] = chats.addMessages(user.id, thread.id, [{ role: 'user', content: body.content }], clock());
      await streamReply({
        ctx,
        model,
        request,
        heartbeatMs,
        logger,
        threadId: thread.id,
        userMessageId: userMessage!.id,
        store: (text, finish) =>
          chats.addMessages(user.id, thread.id, [{ role: 'assistant', ...conversation.settle({ text, finish }), model: model.model }], clock())[0]!,
      });
      return STREAMED;
    },
  });

  return { createThread, listThreads, getThread, deleteThread, listMessages, send, stream };
}
