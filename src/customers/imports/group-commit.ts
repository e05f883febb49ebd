// Group commit for imports: requests that wait while one transaction runs are written together in the next, each
// request's rows in that one transaction. Fewer, larger transactions dirty fewer distinct index pages per row, and
// every transaction costs one WAL write of each page it dirtied.
import type { CustomerRecord } from '../../domain/customers.ts';
import type { StoredCustomer } from '../store/rows.ts';
import { isReplaced, type CustomerWrites, type OnExisting } from '../store/writes.ts';

/** One import request: its validated records, the instant that stamps them, and what to do with a stored email. */
export interface ImportRequest {
  id: number;
  records: CustomerRecord[];
  now: number;
  onExisting: OnExisting;
}

/** A record that replaced a stored customer's fields: its index in the request, and the customer before (null: unchanged). */
export type ReplacedRow = [index: number, before: StoredCustomer | null];

/**
 * What became of a group of requests: each one's new ids (null for a taken email) or its error, and the transactions
 * that committed them, in commit order: each one's generation and requests.
 */
export interface ImportReply {
  results: ({ id: number; ids: (number | null)[]; replaced: ReplacedRow[] } | { id: number; error: unknown })[];
  commits: { generation: number; requests: number[] }[];
}

/**
 * At most this many rows share a transaction: about a quarter of a second of writing at a million customers, the
 * longest other writers of the database should wait for the lock.
 */
const GROUP_ROWS = 4000;

/** Returns a queue that writes pushed requests in groups and tells `onReply` after each transaction. */
export function createImportQueue(writes: CustomerWrites, onReply: (reply: ImportReply) => void) {
  const queue: ImportRequest[] = [];
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    const group: ImportRequest[] = [];
    let rows = 0;
    while (queue.length > 0 && (group.length === 0 || rows + queue[0]!.records.length <= GROUP_ROWS)) {
      const request = queue.shift()!;
      group.push(request);
      rows += request.records.length;
    }
    const { results, commits } = writes.insertBatches(group);
    const reply: ImportReply = {
      results: results.map((result, i) => {
        const { id } = group[i]!;
        if (!('stored' in result)) return { id, error: result.error };
        const replaced: ReplacedRow[] = [];
        const ids = result.stored.map((s, index) => {
          if (!isReplaced(s)) return s?.id ?? null;
          replaced.push([index, s.before === s.after ? null : s.before]);
          return s.after.id;
        });
        return { id, ids, replaced };
      }),
      commits: commits.map(({ generation, batches }) => ({ generation, requests: batches.map((i) => group[i]!.id) })),
    };
    onReply(reply);
    if (queue.length > 0) schedule();
  };

  // setImmediate runs after the pending I/O of this turn, so requests that arrived meanwhile join the group.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  return {
    /** Queues a request; its reply comes after the transaction that holds it. */
    push(request: ImportRequest): void {
      queue.push(request);
      schedule();
    },
  };
}
