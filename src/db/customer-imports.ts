// Inserting customers: one batch at once on the service's connection (customers.create), or imports handed to the
// import writer thread, which groups them (customer-import-writer.ts). Each batch lands in one transaction either way,
// and the change listener hears of every transaction in commit order of its replies.
import { Worker } from 'node:worker_threads';
import { countryKey, type CustomerRecord } from '../domain/customers.ts';
import { beginWriteElsewhere } from './customer-generation.ts';
import { createImportQueue, type ImportReply } from './customer-import-queue.ts';
import type { CustomerChange, CustomerChangeListener, StoredCustomer } from './customer-rows.ts';
import type { CustomerWrites } from './customer-writes.ts';
import type { Db } from './database.ts';

/** The writer thread stops after this long without work, and starts again with the next import. */
const IDLE_MS = 10_000;

interface Waiting {
  records: readonly CustomerRecord[];
  resolve: (ids: (string | null)[]) => void;
  reject: (error: unknown) => void;
  /** Tells the generation readers that this write has been reported. */
  reported: () => void;
}

function stored(record: CustomerRecord, id: number): StoredCustomer {
  return { ...record, id, countryKey: countryKey(record.country) };
}

/** Starts the writer thread; under tsx (TypeScript sources) it first registers tsx's loader in the thread. */
function startWriter(path: string): Worker {
  const entry = new URL('./customer-import-writer.ts', import.meta.url);
  if (!import.meta.url.endsWith('.ts')) return new Worker(entry, { workerData: { path } });
  const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(source, { eval: true, workerData: { path } });
}

/** Returns `insertNow` (synchronous, this connection) and `importLater` (the writer thread, or grouped here for an in-memory database). */
export function createCustomerImports(db: Db, writes: CustomerWrites, onChange: CustomerChangeListener) {
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
      onChange(changes, generation);
    }
    for (const result of reply.results) {
      const request = waiting.get(result.id)!;
      waiting.delete(result.id);
      request.reported();
      if ('ids' in result) request.resolve(result.ids.map((id) => (id === null ? null : String(id))));
      else request.reject(result.error);
    }
    if (waiting.size === 0 && writer) {
      const stopping = writer;
      idle = setTimeout(() => void stopping.terminate(), IDLE_MS).unref();
    }
  };

  // An in-memory database has no second connection: its imports are grouped on this one.
  const local = db.memory ? createImportQueue(writes, receive) : undefined;

  const writerThread = (): Worker => {
    if (writer) return writer;
    const thread = startWriter(db.name);
    thread.unref();
    thread.on('message', receive);
    thread.on('error', () => {}); // reported through 'exit', which follows
    thread.on('exit', () => {
      if (writer === thread) writer = undefined;
      // Requests it never answered may or may not have committed; the generation tells the readers which.
      for (const [id, request] of waiting) {
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
      onChange(result!.stored.filter((s) => s !== undefined).map((after) => ({ before: undefined, after })), commits[0]!.generation);
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
        waiting.set(id, { records, resolve, reject, reported: beginWriteElsewhere(db) });
        writerThread().postMessage(request);
      });
    },
  };
}
