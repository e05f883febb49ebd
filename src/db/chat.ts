// SQL for assistant chat threads and their messages. Every query names the owner: another user's thread is
// `not_found`, exactly like one that does not exist. Knows no HTTP.
import { randomUUID } from 'node:crypto';
import { DEFAULT_THREAD_TITLE, titleFromMessage, type ActionKind, type ActionStatus, type MessageRole } from '../domain/chat.ts';
import { AppError } from '../domain/errors.ts';
import type { SqliteEngine } from './engine.ts';

/** A thread as the API shows it: exactly these fields. */
export interface ChatThread {
  id: string;
  title: string;
  messageCount: number;
  createdAt: string;
  updatedAt: string;
}

/** A message as the API shows it; `model` only on assistant messages. */
export interface ChatMessage {
  id: string;
  threadId: string;
  role: MessageRole;
  content: string;
  model?: string;
  /** Assistant messages cut at the model's token budget; present only when true. */
  truncated?: true;
  /** What the assistant proposed in this reply, in order; present only when it proposed something. */
  actions?: ChatAction[];
  createdAt: string;
}

/** A proposal as the API shows it; `resultId` once confirmed: the segment or campaign it made. */
export interface ChatAction {
  id: string;
  kind: ActionKind;
  /** The body of the operation it runs, as validated when it was proposed. */
  input: unknown;
  summary: string;
  status: ActionStatus;
  resultId?: string;
}

/** A proposal to store with the reply that made it. */
export interface NewAction {
  id: string;
  kind: ActionKind;
  input: unknown;
  summary: string;
}

/** How a proposal ends: confirmed with what its operation answered, or rejected. */
export type ActionOutcome = { status: 'confirmed'; result: unknown; resultId: string } | { status: 'rejected' };

/** A message to store: a user's has no model, an assistant's names the generator that wrote it and says whether it was cut. */
export type NewMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; model: string; truncated?: boolean; actions?: readonly NewAction[] };

/** A row of chat_actions, as both engines return it. */
export interface ActionRow {
  id: string;
  message_id: string;
  kind: ActionKind;
  input: string;
  summary: string;
  status: ActionStatus;
  result: string | null;
  result_id: string | null;
}

/** A row of chat_threads, as both engines return it. */
export interface ThreadRow {
  id: string;
  title: string;
  message_count: number;
  created_at: number;
  updated_at: number;
}

/** A row of chat_messages, as both engines return it. */
export interface MessageRow {
  id: string;
  thread_id: string;
  role: MessageRole;
  content: string;
  model: string | null;
  truncated: 0 | 1;
  created_at: number;
}

/** The thread as the API shows it. */
export function toThread(row: ThreadRow): ChatThread {
  return {
    id: row.id,
    title: row.title,
    messageCount: row.message_count,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** The proposal as the API shows it. */
export function toAction(row: ActionRow): ChatAction {
  return {
    id: row.id,
    kind: row.kind,
    input: JSON.parse(row.input) as unknown,
    summary: row.summary,
    status: row.status,
    ...(row.result_id !== null ? { resultId: row.result_id } : {}),
  };
}

/** The message as the API shows it, with its proposals. */
export function toMessage(row: MessageRow, actions: readonly ChatAction[] = []): ChatMessage {
  return {
    id: row.id,
    threadId: row.thread_id,
    role: row.role,
    content: row.content,
    ...(row.role === 'assistant' && row.model !== null ? { model: row.model } : {}),
    ...(row.truncated === 1 ? { truncated: true as const } : {}),
    ...(actions.length ? { actions: [...actions] } : {}),
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** The stored `truncated` flag of a new message. */
export const isTruncated = (m: NewMessage): 0 | 1 => (m.role === 'assistant' && m.truncated ? 1 : 0);

/** The error of a thread that does not exist or is another user's. */
export const notFound = (id: string) => new AppError('not_found', `No chat thread with id ${id}.`);
/** The error of a proposal the user's thread does not hold. */
export const noAction = (id: string) => new AppError('not_found', `No proposal with id ${id} in this thread.`);

/** A proposal with what its confirm answered (`result`, once confirmed). */
export type StoredAction = ChatAction & { result?: unknown };

/** The proposal with what its confirm answered. */
export function toStoredAction(row: ActionRow): StoredAction {
  return { ...toAction(row), ...(row.result !== null ? { result: JSON.parse(row.result) as unknown } : {}) };
}

/** Returns the messages with their proposals (`actionRows` may hold others: they are left out). */
export function withActions(rows: readonly MessageRow[], actionRows: readonly ActionRow[]): ChatMessage[] {
  const byMessage = new Map<string, ChatAction[]>();
  for (const row of actionRows) {
    const list = byMessage.get(row.message_id) ?? [];
    list.push(toAction(row));
    byMessage.set(row.message_id, list);
  }
  return rows.map((row) => toMessage(row, byMessage.get(row.id)));
}

/** A new message as stored with `id` at `now`, without reading it back. */
export function asStored(threadId: string, m: NewMessage, id: string, now: number): ChatMessage {
  return toMessage(
    { id, thread_id: threadId, role: m.role, content: m.content, model: m.role === 'assistant' ? m.model : null, truncated: isTruncated(m), created_at: now },
    m.role === 'assistant' ? (m.actions ?? []).map((a) => ({ ...a, status: 'proposed' as const })) : [],
  );
}

/**
 * The chat threads and their messages. Every function names the owner: another user's thread is `not_found`
 * (AppError), exactly like one that does not exist.
 */
export interface ChatRepository {
  /** Stores a thread for the user, with the default title when none is given (a first message may rename it then). */
  createThread(userId: string, title: string | undefined, now: Date): Promise<ChatThread>;
  /** Resolves to the user's thread; rejects with `not_found`, also when it belongs to someone else. */
  getThread(userId: string, id: string): Promise<ChatThread>;
  /** Resolves to one page of the user's threads, most recently updated first, and how many they have. */
  listThreads(userId: string, page: number, limit: number): Promise<{ items: ChatThread[]; total: number }>;
  /** Deletes the user's thread with its messages; `not_found`. */
  deleteThread(userId: string, id: string): Promise<void>;
  /** Resolves to the thread's messages, oldest first; `not_found` unless the user owns it. */
  listMessages(userId: string, threadId: string): Promise<ChatMessage[]>;
  /** Resolves to the last `count` messages of a thread, oldest first. */
  lastMessages(threadId: string, count: number): Promise<ChatMessage[]>;
  /**
   * Stores the messages in order, with their proposals, in one transaction, counting them on the thread and moving
   * its `updatedAt`; resolves to them as stored. `not_found` when the user has no such thread (any more).
   */
  addMessages(userId: string, threadId: string, messages: readonly NewMessage[], now: Date): Promise<ChatMessage[]>;
  /** Resolves to one proposal of the user's thread; `not_found` when the thread is not the user's or holds no such proposal. */
  getAction(userId: string, threadId: string, actionId: string): Promise<StoredAction>;
  /**
   * Ends a proposal: confirmed with what its operation answered, or rejected, and lets go of its confirm's claim.
   * Resolves to the proposal as it is afterwards: a proposal already confirmed or rejected is left as it was, and so is
   * one another instance is confirming (a rejection finds it still proposed). `not_found` as `getAction`.
   */
  settleAction(userId: string, threadId: string, actionId: string, outcome: ActionOutcome, now: Date): Promise<StoredAction>;
  /**
   * Claims the running of a proposal's confirm for this instance (after `getAction` found it the user's and
   * proposed): `claimed`, or `elsewhere` while another live instance runs it, or `settled` when it is no longer
   * proposed (or gone). This instance's own steps on a proposal are kept apart by the caller; the claim keeps them
   * apart from the other instances'.
   */
  claimConfirm(actionId: string): Promise<ConfirmClaim>;
  /** Lets go of this instance's claim on a proposal whose confirm failed: it stays proposed, for anyone to confirm. */
  releaseConfirm(actionId: string): Promise<void>;
  /**
   * Resolves once the proposal no longer runs on another live instance: settled, released after a failure, or its
   * runner's lease ended. Rejects with the signal's reason when it aborts first.
   */
  whileConfirmingElsewhere(actionId: string, signal: AbortSignal): Promise<void>;
}

/** What claiming a proposal's confirm found: see `ChatRepository.claimConfirm`. */
export type ConfirmClaim = 'claimed' | 'elsewhere' | 'settled';

/** Returns the chat repository, its statements prepared once. */
export function createChatRepository(engine: SqliteEngine): ChatRepository {
  const { db } = engine;
  const insertThread = db.prepare(
    `INSERT INTO chat_threads (id, user_id, title, title_is_auto, message_count, created_at, updated_at)
     VALUES (@id, @userId, @title, @titleIsAuto, 0, @now, @now)`,
  );
  const threadById = db.prepare<[string, string], ThreadRow>('SELECT * FROM chat_threads WHERE id = ? AND user_id = ?');
  // Ties within one millisecond fall back to the id: an arbitrary but stable order the index serves as it is.
  const threadPage = db.prepare<[string, number, number], ThreadRow>(
    'SELECT * FROM chat_threads WHERE user_id = ? ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?',
  );
  const threadCount = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM chat_threads WHERE user_id = ?');
  // Messages go with the thread through ON DELETE CASCADE, inside this one statement.
  const removeThread = db.prepare('DELETE FROM chat_threads WHERE id = ? AND user_id = ?');
  const messagesOf = db.prepare<[string], MessageRow>('SELECT * FROM chat_messages WHERE thread_id = ? ORDER BY seq');
  const lastMessagesOf = db.prepare<[string, number], MessageRow>(
    'SELECT * FROM (SELECT * FROM chat_messages WHERE thread_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq',
  );
  const insertMessage = db.prepare(
    `INSERT INTO chat_messages (id, thread_id, role, content, model, truncated, created_at)
     VALUES (@id, @threadId, @role, @content, @model, @truncated, @now)`,
  );
  const insertAction = db.prepare(
    `INSERT INTO chat_actions (id, message_id, thread_id, kind, input, summary, status, created_at, updated_at)
     VALUES (@id, @messageId, @threadId, @kind, @input, @summary, 'proposed', @now, @now)`,
  );
  const actionsOfThread = db.prepare<[string], ActionRow>('SELECT * FROM chat_actions WHERE thread_id = ? ORDER BY seq');
  // SQLite's json_each; PostgreSQL will take the ids as an array (= ANY($1)).
  const actionsOfMessages = db.prepare<[string], ActionRow>(
    'SELECT * FROM chat_actions WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY seq',
  );
  const actionById = db.prepare<[string, string, string], ActionRow>(
    `SELECT a.* FROM chat_actions a JOIN chat_threads t ON t.id = a.thread_id
     WHERE a.id = ? AND a.thread_id = ? AND t.user_id = ?`,
  );
  // Only a proposal moves: a second confirm or a reject after a confirm changes nothing.
  const settle = db.prepare(
    `UPDATE chat_actions SET status = @status, result = @result, result_id = @resultId, updated_at = @now
     WHERE id = @id AND status = 'proposed'`,
  );
  // The first user message renames a thread that still has its default title; an explicit title is kept.
  const touchThread = db.prepare(
    `UPDATE chat_threads SET
       message_count = message_count + @count,
       updated_at = @now,
       title = CASE WHEN title_is_auto = 1 AND @autoTitle IS NOT NULL THEN @autoTitle ELSE title END,
       title_is_auto = CASE WHEN @autoTitle IS NOT NULL THEN 0 ELSE title_is_auto END
     WHERE id = @threadId AND user_id = @userId`,
  );

  // The synchronous parts below run inside one `engine.write` each (or as plain reads).
  const thread = (userId: string, id: string): ChatThread => {
    const row = threadById.get(id, userId);
    if (!row) throw notFound(id);
    return toThread(row);
  };

  const action = (userId: string, threadId: string, actionId: string): StoredAction => {
    const row = actionById.get(actionId, threadId, userId);
    if (!row) throw noAction(actionId);
    return toStoredAction(row);
  };

  /** Writes the messages and their proposals after counting them on the thread; returns their ids, in order. */
  const insertMessages = (userId: string, threadId: string, messages: readonly NewMessage[], now: number): string[] => {
    const firstUser = messages.find((m) => m.role === 'user');
    const touched = touchThread.run({ threadId, userId, count: messages.length, now, autoTitle: firstUser ? titleFromMessage(firstUser.content) : null });
    if (touched.changes === 0) throw notFound(threadId);
    return messages.map((m) => {
      const id = randomUUID();
      insertMessage.run({ id, threadId, role: m.role, content: m.content, model: m.role === 'assistant' ? m.model : null, truncated: isTruncated(m), now });
      for (const a of (m.role === 'assistant' && m.actions) || []) {
        insertAction.run({ id: a.id, messageId: id, threadId, kind: a.kind, input: JSON.stringify(a.input), summary: a.summary, now });
      }
      return id;
    });
  };

  return {
    createThread(userId, title, now) {
      const id = randomUUID();
      return engine.write(() => {
        insertThread.run({ id, userId, title: title ?? DEFAULT_THREAD_TITLE, titleIsAuto: title === undefined ? 1 : 0, now: now.getTime() });
        return thread(userId, id);
      });
    },

    async getThread(userId, id) {
      return thread(userId, id);
    },

    async listThreads(userId, page, limit) {
      const total = threadCount.get(userId)!.n;
      const offset = (page - 1) * limit;
      return { items: offset < total ? threadPage.all(userId, limit, offset).map(toThread) : [], total };
    },

    deleteThread(userId, id) {
      return engine.write(() => {
        if (removeThread.run(id, userId).changes === 0) throw notFound(id);
      });
    },

    async listMessages(userId, threadId) {
      thread(userId, threadId);
      return withActions(messagesOf.all(threadId), actionsOfThread.all(threadId));
    },

    async lastMessages(threadId, count) {
      const rows = lastMessagesOf.all(threadId, count);
      return withActions(rows, actionsOfMessages.all(JSON.stringify(rows.map((r) => r.id))));
    },

    async addMessages(userId, threadId, messages, now) {
      const at = now.getTime();
      const ids = await engine.write(() => insertMessages(userId, threadId, messages, at));
      return messages.map((m, i) => asStored(threadId, m, ids[i]!, at));
    },

    async getAction(userId, threadId, actionId) {
      return action(userId, threadId, actionId);
    },

    settleAction(userId, threadId, actionId, outcome, now) {
      return engine.write(() => {
        action(userId, threadId, actionId);
        settle.run({
          id: actionId,
          status: outcome.status,
          result: outcome.status === 'confirmed' ? JSON.stringify(outcome.result) : null,
          resultId: outcome.status === 'confirmed' ? outcome.resultId : null,
          now: now.getTime(),
        });
        return action(userId, threadId, actionId);
      });
    },

    // One process runs on a SQLite file: the route's own queue per proposal is the whole story, so every claim holds.
    async claimConfirm() {
      return 'claimed';
    },

    async releaseConfirm() {},

    async whileConfirmingElsewhere() {},
  };
}
