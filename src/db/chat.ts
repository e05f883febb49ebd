// SQL for assistant chat threads and their messages. Every query names the owner: another user's thread is
// `not_found`, exactly like one that does not exist. Knows no HTTP.
import { randomUUID } from 'node:crypto';
import { DEFAULT_THREAD_TITLE, titleFromMessage, type MessageRole } from '../domain/chat.ts';
import { AppError } from '../domain/errors.ts';
import type { Db } from './database.ts';

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
  createdAt: string;
}

/** A message to store: a user's has no model, an assistant's names the generator that wrote it and says whether it was cut. */
export type NewMessage = { role: 'user'; content: string } | { role: 'assistant'; content: string; model: string; truncated?: boolean };

interface ThreadRow {
  id: string;
  title: string;
  message_count: number;
  created_at: number;
  updated_at: number;
}

interface MessageRow {
  id: string;
  thread_id: string;
  role: MessageRole;
  content: string;
  model: string | null;
  truncated: 0 | 1;
  created_at: number;
}

function toThread(row: ThreadRow): ChatThread {
  return {
    id: row.id,
    title: row.title,
    messageCount: row.message_count,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

function toMessage(row: MessageRow): ChatMessage {
  return {
    id: row.id,
    threadId: row.thread_id,
    role: row.role,
    content: row.content,
    ...(row.role === 'assistant' && row.model !== null ? { model: row.model } : {}),
    ...(row.truncated === 1 ? { truncated: true as const } : {}),
    createdAt: new Date(row.created_at).toISOString(),
  };
}

const isTruncated = (m: NewMessage): 0 | 1 => (m.role === 'assistant' && m.truncated ? 1 : 0);

const notFound = (id: string) => new AppError('not_found', `No chat thread with id ${id}.`);

export type ChatRepository = ReturnType<typeof createChatRepository>;

/** Returns the chat queries, prepared once. */
export function createChatRepository(db: Db) {
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
  // The first user message renames a thread that still has its default title; an explicit title is kept.
  const touchThread = db.prepare(
    `UPDATE chat_threads SET
       message_count = message_count + @count,
       updated_at = @now,
       title = CASE WHEN title_is_auto = 1 AND @autoTitle IS NOT NULL THEN @autoTitle ELSE title END,
       title_is_auto = CASE WHEN @autoTitle IS NOT NULL THEN 0 ELSE title_is_auto END
     WHERE id = @threadId AND user_id = @userId`,
  );

  const getThread = (userId: string, id: string): ChatThread => {
    const row = threadById.get(id, userId);
    if (!row) throw notFound(id);
    return toThread(row);
  };

  const addMessages = db.transaction((userId: string, threadId: string, messages: readonly NewMessage[], now: number): string[] => {
    const firstUser = messages.find((m) => m.role === 'user');
    const touched = touchThread.run({ threadId, userId, count: messages.length, now, autoTitle: firstUser ? titleFromMessage(firstUser.content) : null });
    if (touched.changes === 0) throw notFound(threadId);
    return messages.map((m) => {
      const id = randomUUID();
      insertMessage.run({ id, threadId, role: m.role, content: m.content, model: m.role === 'assistant' ? m.model : null, truncated: isTruncated(m), now });
      return id;
    });
  });

  return {
    /** Stores a thread for the user, with the default title when none is given (a first message may rename it then). */
    createThread(userId: string, title: string | undefined, now: Date): ChatThread {
      const id = randomUUID();
      insertThread.run({ id, userId, title: title ?? DEFAULT_THREAD_TITLE, titleIsAuto: title === undefined ? 1 : 0, now: now.getTime() });
      return getThread(userId, id);
    },

    /** Returns the user's thread; throws `not_found`, also when it belongs to someone else. */
    getThread,

    /** Returns one page of the user's threads, most recently updated first, and how many they have. */
    listThreads(userId: string, page: number, limit: number): { items: ChatThread[]; total: number } {
      const total = threadCount.get(userId)!.n;
      const offset = (page - 1) * limit;
      return { items: offset < total ? threadPage.all(userId, limit, offset).map(toThread) : [], total };
    },

    /** Deletes the user's thread with its messages; throws `not_found`. */
    deleteThread(userId: string, id: string): void {
      if (removeThread.run(id, userId).changes === 0) throw notFound(id);
    },

    /** Returns the thread's messages, oldest first; throws `not_found` unless the user owns it. */
    listMessages(userId: string, threadId: string): ChatMessage[] {
      getThread(userId, threadId);
      return messagesOf.all(threadId).map(toMessage);
    },

    /** Returns the last `count` messages of a thread, oldest first. */
    lastMessages(threadId: string, count: number): ChatMessage[] {
      return lastMessagesOf.all(threadId, count).map(toMessage);
    },

    /**
     * Stores the messages in order in one transaction, counting them on the thread and moving its `updatedAt`;
     * returns them as stored. Throws `not_found` when the user has no such thread (any more).
     */
    addMessages(userId: string, threadId: string, messages: readonly NewMessage[], now: Date): ChatMessage[] {
      const ids = addMessages.immediate(userId, threadId, messages, now.getTime());
      return messages.map((m, i) =>
        toMessage({
          id: ids[i]!,
          thread_id: threadId,
          role: m.role,
          content: m.content,
          model: m.role === 'assistant' ? m.model : null,
          truncated: isTruncated(m),
          created_at: now.getTime(),
        }),
      );
    },
  };
}
