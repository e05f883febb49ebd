// Assistant chat threads on PostgreSQL: the same contract as ../chat.ts. Concurrency SQLite's single writer hid:
// - messages added to one thread at once: each addMessages first updates the thread's row (its count, its title),
//   which locks that row until it commits, so the additions to a thread run one after another and each one's
//   messages take consecutive places in seq order (the identity gives distinct numbers; the lock keeps a question
//   and its reply from being interleaved with another pair);
// - a thread deleted while messages are added: the DELETE and that UPDATE take the same row lock, so an addition
//   either commits before the delete (whose cascade then removes its messages) or finds no thread (`not_found`);
// - a proposal settled twice at once: the UPDATE changes only a row still `proposed`; the second waits for the first
//   to commit, finds the row no longer proposed, changes nothing, and reads what the first stored;
// - a proposal confirmed on two instances at once: each instance keeps its own confirms of a proposal apart, and
//   `running_on` keeps the instances apart: the first to set it runs the operation, the others wait for it to settle
//   or let go (a NOTIFY on CONFIRM_CHANNEL, or a poll that also sees its lease end), and a rejection meanwhile changes
//   nothing. A runner whose lease ends while it still runs (cut off from the database) may see another run it too.
import { randomUUID } from 'node:crypto';
import { DEFAULT_THREAD_TITLE, titleFromMessage } from '../../domain/chat.ts';
import {
  asStored,
  type ConfirmClaim,
  isTruncated,
  noAction,
  notFound,
  toStoredAction,
  toThread,
  withActions,
  type ActionOutcome,
  type ActionRow,
  type ChatRepository,
  type MessageRow,
  type NewMessage,
  type StoredAction,
  type ThreadRow,
} from '../chat.ts';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';
import { settleOrRetry, whileHeldElsewhere } from './claims.ts';

/** Reads the user's thread; `not_found` when it does not exist or is another user's. */
async function threadOf(sql: PgSql, userId: string, id: string): Promise<ThreadRow> {
  const [row] = await sql<ThreadRow[]>`SELECT * FROM chat_threads WHERE id = ${id} AND user_id = ${userId}`;
  if (!row) throw notFound(id);
  return row;
}

/** Reads one proposal of the user's thread; `not_found` when the thread is not the user's or does not hold it. */
async function actionOf(sql: PgSql, userId: string, threadId: string, actionId: string): Promise<StoredAction> {
  const [row] = await sql<ActionRow[]>`
    SELECT a.* FROM chat_actions a JOIN chat_threads t ON t.id = a.thread_id
    WHERE a.id = ${actionId} AND a.thread_id = ${threadId} AND t.user_id = ${userId}`;
  if (!row) throw noAction(actionId);
  return toStoredAction(row);
}

/**
 * Counts the messages on the thread, moves its `updatedAt` and names it after the first user message while it has
 * its default title; this locks the thread's row until the transaction ends. `not_found` when the user has no such thread.
 */
async function touchThread(tx: PgSql, userId: string, threadId: string, messages: readonly NewMessage[], now: number): Promise<void> {
  const firstUser = messages.find((m) => m.role === 'user');
  const autoTitle = firstUser ? titleFromMessage(firstUser.content) : null;
  const touched = await tx`
    UPDATE chat_threads SET
      message_count = message_count + ${messages.length},
      updated_at = ${now},
      title = CASE WHEN title_is_auto = 1 AND ${autoTitle}::text IS NOT NULL THEN ${autoTitle}::text ELSE title END,
      title_is_auto = CASE WHEN ${autoTitle}::text IS NOT NULL THEN 0 ELSE title_is_auto END
    WHERE id = ${threadId} AND user_id = ${userId}`;
  if (touched.count === 0) throw notFound(threadId);
}

/** Writes the messages and their proposals, in order (one statement each: a VALUES list takes seq numbers in its order); returns their ids. */
async function insertMessages(tx: PgSql, threadId: string, messages: readonly NewMessage[], now: number): Promise<string[]> {
  const ids = messages.map(() => randomUUID());
  const rows = messages.map((m, i) => ({
    id: ids[i]!,
    thread_id: threadId,
    role: m.role,
    content: m.content,
    model: m.role === 'assistant' ? m.model : null,
    truncated: isTruncated(m),
    created_at: now,
  }));
  if (rows.length > 0) await tx`INSERT INTO chat_messages ${tx(rows, 'id', 'thread_id', 'role', 'content', 'model', 'truncated', 'created_at')}`;
  const actions = messages.flatMap((m, i) =>
    (m.role === 'assistant' && m.actions ? m.actions : []).map((a) => ({
      id: a.id,
      message_id: ids[i]!,
      thread_id: threadId,
      kind: a.kind,
      input: JSON.stringify(a.input),
      summary: a.summary,
      status: 'proposed',
      created_at: now,
      updated_at: now,
    })),
  );
  if (actions.length > 0) {
    await tx`INSERT INTO chat_actions ${tx(actions, 'id', 'message_id', 'thread_id', 'kind', 'input', 'summary', 'status', 'created_at', 'updated_at')}`;
  }
  return ids;
}

/** The channel a proposal's id is sent on when its confirm's claim ends (settled or released), in that transaction. */
const CONFIRM_CHANNEL = 'chat_actions';

/**
 * Settles the proposal if it is still proposed and, for a rejection, no other live instance than `me` is confirming
 * it; a settled one, or none, is left as it is. Resolves to whether it changed.
 */
async function settleIfProposed(tx: PgSql, me: string, userId: string, threadId: string, actionId: string, outcome: ActionOutcome, now: number): Promise<boolean> {
  const confirmed = outcome.status === 'confirmed';
  const settled = await tx`
    UPDATE chat_actions a SET status = ${outcome.status}, result = ${confirmed ? JSON.stringify(outcome.result) : null},
      result_id = ${confirmed ? outcome.resultId : null}, updated_at = ${now}, running_on = NULL
    FROM chat_threads t
    WHERE a.id = ${actionId} AND a.thread_id = ${threadId} AND t.id = a.thread_id AND t.user_id = ${userId}
      AND a.status = 'proposed'
      AND (${confirmed} OR a.running_on IS NULL OR a.running_on = ${me} OR NOT campaigns_instance_alive(a.running_on))`;
  return settled.count > 0;
}

/** Claims the proposal's confirm for `me` unless another live instance holds it; resolves to what it found. */
async function claimIfFree(tx: PgSql, me: string, actionId: string): Promise<ConfirmClaim> {
  // `me` may take its own claim again: its own confirms are kept apart in the process, and one left behind (a release
  // that failed) must not block it.
  const claimed = await tx`
    UPDATE chat_actions SET running_on = ${me}
    WHERE id = ${actionId} AND status = 'proposed'
      AND (running_on IS NULL OR running_on = ${me} OR NOT campaigns_instance_alive(running_on))`;
  if (claimed.count > 0) return 'claimed';
  // A statement of its own: under READ COMMITTED it sees what the claim's holder or a settle committed meanwhile.
  const [row] = await tx<{ status: string }[]>`SELECT status FROM chat_actions WHERE id = ${actionId}`;
  return row?.status === 'proposed' ? 'elsewhere' : 'settled';
}

/** Whether the proposal is still proposed and claimed by a live instance other than `me`. */
async function runsElsewhere(sql: PgSql, me: string, actionId: string): Promise<boolean> {
  const [row] = await sql<{ elsewhere: boolean }[]>`
    SELECT status = 'proposed' AND running_on IS NOT NULL AND running_on <> ${me} AND campaigns_instance_alive(running_on) AS elsewhere
    FROM chat_actions WHERE id = ${actionId}`;
  return row?.elsewhere ?? false;
}

/**
 * Returns the chat repository on the PostgreSQL engine; `instanceId` (db/postgres/instances.ts) names this instance
 * in the confirms it claims. Single reads run on the pool, outside any transaction.
 */
export function createPgChatRepository(engine: PostgresEngine, instanceId: string): ChatRepository {
  const { sql } = engine;
  return {
    createThread(userId, title, now) {
      const at = now.getTime();
      return engine.write(async (tx) => {
        const [row] = await tx<ThreadRow[]>`
          INSERT INTO chat_threads (id, user_id, title, title_is_auto, message_count, created_at, updated_at)
          VALUES (${randomUUID()}, ${userId}, ${title ?? DEFAULT_THREAD_TITLE}, ${title === undefined ? 1 : 0}, 0, ${at}, ${at})
          RETURNING *`;
        return toThread(row!);
      });
    },

    async getThread(userId, id) {
      return toThread(await threadOf(sql, userId, id));
    },

    listThreads(userId, page, limit) {
      // One snapshot: the total counts the threads the page is taken from.
      return engine.read(async (tx) => {
        const [count] = await tx<{ n: number }[]>`SELECT count(*) AS n FROM chat_threads WHERE user_id = ${userId}`;
        const total = count!.n;
        const offset = (page - 1) * limit;
        // Ties within one millisecond fall back to the id, as on SQLite (the id is COLLATE "C": the same order).
        const rows = offset < total
          ? await tx<ThreadRow[]>`SELECT * FROM chat_threads WHERE user_id = ${userId} ORDER BY updated_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`
          : [];
        return { items: rows.map(toThread), total };
      });
    },

    deleteThread(userId, id) {
      return engine.write(async (tx) => {
        // Messages and proposals go with the thread through ON DELETE CASCADE, inside this one statement.
        const removed = await tx`DELETE FROM chat_threads WHERE id = ${id} AND user_id = ${userId}`;
        if (removed.count === 0) throw notFound(id);
      });
    },

    listMessages(userId, threadId) {
      // One snapshot: a thread deleted meanwhile is not_found, not an empty list.
      return engine.read(async (tx) => {
        await threadOf(tx, userId, threadId);
        const [rows, actions] = await Promise.all([
          tx<MessageRow[]>`SELECT * FROM chat_messages WHERE thread_id = ${threadId} ORDER BY seq`,
          tx<ActionRow[]>`SELECT * FROM chat_actions WHERE thread_id = ${threadId} ORDER BY seq`,
        ]);
        return withActions(rows, actions);
      });
    },

    async lastMessages(threadId, count) {
      // No transaction needed: a message's proposals committed with it, so the second statement, which sees at least
      // what the first saw, finds them all.
      const rows = await sql<MessageRow[]>`
        SELECT * FROM (SELECT * FROM chat_messages WHERE thread_id = ${threadId} ORDER BY seq DESC LIMIT ${count}) AS last ORDER BY seq`;
      if (rows.length === 0) return [];
      const actions = await sql<ActionRow[]>`SELECT * FROM chat_actions WHERE message_id = ANY(${rows.map((r) => r.id)}) ORDER BY seq`;
      return withActions(rows, actions);
    },

    async addMessages(userId, threadId, messages, now) {
      const at = now.getTime();
      const ids = await engine.write(async (tx) => {
        await touchThread(tx, userId, threadId, messages, at);
        return insertMessages(tx, threadId, messages, at);
      });
      return messages.map((m, i) => asStored(threadId, m, ids[i]!, at));
    },

    async getAction(userId, threadId, actionId) {
      return actionOf(sql, userId, threadId, actionId);
    },

    settleAction(userId, threadId, actionId, outcome, now) {
      return engine.write(async (tx) => {
        // Read after the update: under READ COMMITTED this statement sees what a settle that won the race committed.
        if (await settleIfProposed(tx, instanceId, userId, threadId, actionId, outcome, now.getTime())) engine.notify(CONFIRM_CHANNEL, actionId);
        return actionOf(tx, userId, threadId, actionId);
      });
    },

    claimConfirm(actionId) {
      return engine.write((tx) => claimIfFree(tx, instanceId, actionId));
    },

    async releaseConfirm(actionId) {
      // Tried again in the background when it fails: a claim left under this live instance would keep confirms
      // elsewhere waiting, and rejects refused.
      await settleOrRetry(() =>
        engine.write(async (tx) => {
          const released = await tx`UPDATE chat_actions SET running_on = NULL WHERE id = ${actionId} AND running_on = ${instanceId}`;
          if (released.count > 0) engine.notify(CONFIRM_CHANNEL, actionId);
        }),
      );
    },

    whileConfirmingElsewhere(actionId, signal) {
      return whileHeldElsewhere(engine, CONFIRM_CHANNEL, actionId, () => runsElsewhere(sql, instanceId, actionId), signal);
    },
  };
}
