// Inserting customers: one batch at once on the service's connection (customers.create), or imports handed to the
// import writer thread, which groups them (writer.thread.ts), with the checkpointer thread copying the log they leave
// into the database (checkpointer.thread.ts). Each batch lands in one transaction either way, and the change feed
// hears of every transaction in commit order of its replies.
import type { Worker } from 'node:worker_threads';
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import type { CustomerChangeFeed } from '../change-feed.ts';
import { createImportQueue, type ImportReply } from './group-commit.ts';
import type { CustomerChange, StoredCustomer } from '../store/rows.ts';
import type { CustomerWrites } from '../store/writes.ts';
import type { Db } from '../../db/database.ts';
import { startWorkerThread } from '../../db/worker-thread.ts';

/** The threads stop after this long without work, and start again with the next import. */
const IDLE_MS = 10_000;

interface Waiting {
  records: readonly CustomerRecord[];
  resolve: (ids: (string | null)[]) => void;
  reject: (error: unknown) => void;
  /** Tells the generation readers that this write has been reported. */
  reported: () => void;
  /** The writer thread it was sent to; none for an in-memory database. */
  thread?: Worker;
}

function stored(record: CustomerRecord, id: number): StoredCustomer {
  return { ...record, id, countryKey: countryKey(record.country) };
}

/** Returns `insertNow` (synchronous, this connection) and `importLater` (the writer thread, or grouped here for an in-memory database). */
export function createCustomerImports(db: Db, writes: CustomerWrites, feed: CustomerChangeFeed) {
  const waiting = new Map<number, Waiting>();
  let nextId = 1;
  let writer: Worker | undefined;
  let idle: NodeJS.Timeout | undefined;

  const receive = (reply: ImportReply) => {
    const ids = new Map(reply.results.map((result) => [result.id, 'ids' in result ? result.ids : []]));
    for (const { generation, requests } of reply.commits) {
      const changes: CustomerChange[] = [];
      for (const id of requests) {
        const { records } = waiting.get(id)!;
        ids.get(id)!.forEach((customerId, i) => {
          if (customerId !== null) changes.push({ before: undefined, after: stored(records[i]!, customerId) });
        });
      }
      feed.publish(changes, generation);
    }
    for (const result of reply.results) {
      const request = waiting.get(result.id)!;
      waiting.delete(result.id);
      request.reported();
      if ('ids' in result) request.resolve(result.ids.map((id) => (id === null ? null : String(id))));
      else request.reject(result.error);
    }
    if (waiting.size === 0 && writer) idle = setTimeout(stopThreads, IDLE_MS).unref();
  };

  // While the writer thread imports, the checkpointer thread keeps the log short, and this connection's commits must
  // not checkpoint (SQLite's default after 1000 frames): that would copy a large import's log on the event loop.
  let checkpointer: Worker | undefined;
  let checkpointing: 'idle' | 'running' | 'again' = 'idle';
  const checkpoint = () => {
    if (checkpointing !== 'idle') {
      checkpointing = 'again';
      return;
    }
    if (!checkpointer) {
      const thread = startWorkerThread(new URL('./checkpointer.thread.ts', import.meta.url), { path: db.name });
      thread.on('message', () => {
        if (checkpointer !== thread) return;
        const again = checkpointing === 'again';
        checkpointing = 'idle';
        if (again) checkpoint();
      });
      thread.on('error', () => {}); // reported through 'exit', which follows
      thread.on('exit', () => {
        if (checkpointer !== thread) return;
        checkpointer = undefined;
        checkpointing = 'idle';
      });
      checkpointer = thread;
    }
    checkpointing = 'running';
    checkpointer.postMessage('checkpoint');
  };

  const stopThreads = () => {
    writer?.postMessage('stop');
    checkpointer?.postMessage('stop');
    writer = undefined;
    checkpointer = undefined;
    checkpointing = 'idle';
    if (db.open) db.pragma('wal_autocheckpoint = 1000');
  };

  // An in-memory database has no second connection: its imports are grouped on this one.
  const local = db.memory ? createImportQueue(writes, receive) : undefined;

  const writerThread = (): Worker => {
    if (writer) return writer;
    const thread = startWorkerThread(new URL('./writer.thread.ts', import.meta.url), { path: db.name });
    db.pragma('wal_autocheckpoint = 0');
    thread.on('message', (message: ImportReply | 'checkpoint') => (message === 'checkpoint' ? checkpoint() : receive(message)));
    thread.on('error', () => {}); // reported through 'exit', which follows
    thread.on('exit', () => {
      if (writer === thread) writer = undefined;
      // Requests it never answered may or may not have committed; the generation tells the readers which.
      for (const [id, request] of waiting) {
        if (request.thread !== thread) continue;
        waiting.delete(id);
        request.reported();
        request.reject(new Error('The import writer stopped before answering.'));
      }
    });
    writer = thread;
    return thread;
  };

  return {
    /** Stores the records in one transaction on this connection; returns each one's id, or null when its email was taken. */
    insertNow(records: readonly CustomerRecord[], now: Date): (string | null)[] {
      const { results, commits } = writes.insertBatches([{ records, now: now.getTime() }]);
      const [result] = results;
      if ('error' in result!) throw result.error;
      feed.publish(result!.stored.filter((s) => s !== undefined).map((after) => ({ before: undefined, after })), commits[0]!.generation);
      return result!.stored.map((s) => (s ? String(s.id) : null));
    },

    /** Stores the records in one transaction, possibly shared with other imports; resolves to the ids as `insertNow` returns them. */
    importLater(records: readonly CustomerRecord[], now: Date): Promise<(string | null)[]> {
      if (records.length === 0) return Promise.resolve([]);
      const id = nextId++;
      clearTimeout(idle);
      return new Promise((resolve, reject) => {
        const request = { id, records: [...records], now: now.getTime() };
        if (local) {
          waiting.set(id, { records, resolve, reject, reported: () => {} });
          local.push(request);
          return;
        }
        const thread = writerThread();
        waiting.set(id, { records, resolve, reject, reported: feed.beginWriteElsewhere(), thread });
        thread.postMessage(request);
      });
    },
  };
}
