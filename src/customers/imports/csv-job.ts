// Running one CSV import job on the import writer's connection. The parser (csv-parser.ts, on the service's event
// loop) reads and checks the rows (in batches sorted by email) and posts them through a port while this thread writes
// them, in transactions of up to half a second; when a write of the service asks for the lock through the write turns
// (db/write-gate.ts, WriterTurns on this side), the transaction commits early enough that the write waits about
// WAIT_BUDGET_MS at most. Each holds its rows, its skipped rows and the job's counts, so a crash loses nothing the
// counts report.
import type { MessagePort } from 'node:worker_threads';
import type { CustomerRecord } from '../../domain/customers.ts';
import type { WriterTurns } from '../../db/write-gate.ts';
import { toColumns, type InsertedColumns, type StoredCustomer } from '../store/rows.ts';
import { CustomerIdSet, isReplaced, type CustomerWrites, type Imported } from '../store/writes.ts';
import type { jobProgressWriter, JobToRun, SkippedRow } from './job-store.ts';
import type { ParsedBatch, ParserMessage } from './csv-parser.ts';
import { unpackRow } from './packed-rows.ts';
import { duplicateReason, repeatedReason } from './reasons.ts';

/**
 * On the writer thread (its own connection, with write turns): a transaction nobody waits for ends after this long or
 * this many rows. Larger transactions write each index page once for more rows (a commit writes every page the
 * transaction changed; into a million customers, most of the pages of four indexes whatever its size); a write of
 * the service never waits for one to end (it asks, and the transaction commits soon after, see WAIT_BUDGET_MS). But
 * the commit of a larger one takes longer: at 1 s and 50,000 rows, edits asked during a transaction's second half
 * waited 250-580 ms for its commit.
 */
const LONG_MS = 500;
const MAX_ROWS = 20_000;
/**
 * A write of the service (or an import request) that waits for a transaction waits at most about this long: the
 * transaction goes on inserting until this, less what its commit is expected to take, has passed since it began, then
 * commits. Longer means larger transactions while the service writes often (each costs a commit), and longer waits.
 * Commits into a million customers take 50-80 ms but now and then over 150 (the disk): with 160, edits every 15 ms
 * during a job into a million waited 200-230 ms at p99 and up to 300; with 130, 160 at p99, for the same rows per
 * second (more transactions, each inserting for a shorter time). Since commits no longer index the whole
 * transaction's search text (store/writes.ts), 100 instead of 130 took the edits' p99 on a slow machine from
 * 166-207 ms to 142-146, the job's rows per second the same within the machine's noise.
 */
const WAIT_BUDGET_MS = 100;
/**
 * What a job expects its first commit to take, until commits have been timed. The first transactions into a large
 * base read index pages no cache holds yet and committed in 120-250 ms: expecting 60, edits waited up to 290 ms.
 */
const FIRST_COMMIT_MS = 120;
/** The time a transaction inserts before giving way stays within these bounds, whatever commits have taken. */
const YIELD_AFTER_MIN_MS = 40;
const YIELD_AFTER_MAX_MS = 140;
/** Every transaction stores at least this many rows (when there are), however soon it is asked to give way. */
const MIN_ROWS = 200;
/** How long the writer lets waiting writes of the service go first before its next transaction, at most. */
const PATIENCE_MS = 250;
/**
 * On the service's own connection (an in-memory database, no second connection): every transaction blocks the event
 * loop, so it takes about a tenth of a second, then pauses so requests are served.
 */
const SHORT_MS = 100;
const GAP_MS = 30;
/** Transactions start once this many parsed rows wait (or the file has ended), so none is small for want of rows. */
const READY_ROWS = 2_000;
/** Parsed batches asked for ahead of the writer, so parsing never waits for a commit nor runs far ahead of it. */
const BATCHES_AHEAD = 6;

/**
 * What one committed transaction of a job stored, for the change feed: its new customers' facts, and (updating) the
 * facts before and after of the customers whose fields it changed, in the same order.
 */
export interface JobCommit {
  seq: number;
  generation: number;
  inserted: InsertedColumns;
  replaced?: { before: InsertedColumns; after: InsertedColumns };
}

export interface CsvJobDeps {
  writes: CustomerWrites;
  progress: ReturnType<typeof jobProgressWriter>;
  /** Told after each transaction commits. */
  onCommit(commit: JobCommit): void;
  /** The write turns shared with the service's connection, on the writer thread; none on the service's connection. */
  turns?: WriterTurns;
}

/**
 * Imports the file at `path` for the job; resolves to `completed`, or `failed` when the file cannot be read to its
 * end (what was committed before stays, and the reason is its last skipped row). Rows that break a rule, repeat a
 * stored email or cannot be parsed are skipped with their line. Throws what a transaction throws.
 *
 * Each transaction holds a prefix of the rows received (batches in order, each batch's records in order): its
 * records, the skipped rows of the batches it completes, and the job's counts of exactly those rows, so a crash
 * loses nothing the counts report.
 */
export async function runCsvJob(job: JobToRun, parser: MessagePort, deps: CsvJobDeps): Promise<'completed' | 'failed'> {
  const { turns } = deps;
  const longMs = turns ? LONG_MS : SHORT_MS;
  /** Batches received and not yet wholly committed; `taken` records of the first are committed. */
  const batches: ParsedBatch[] = [];
  let taken = 0;
  let waitingRows = 0;
  let bytes = 0;
  /** Whether a transaction has taken the end of the file (its reach, and the reason it broke off) in. */
  let finished = false;
  /** How long a commit takes, from the last row inserted to the lock given back: a moving average, ms. */
  let commitMs = FIRST_COMMIT_MS;

  const parsed = receiveBatches(parser);
  /** Updating: the customers this job has stored or replaced, so a later row repeating an email is reported, not applied. */
  const seen = job.onExisting === 'update' ? new CustomerIdSet() : undefined;

  /** Commits the next prefix of the rows received; with `end`, once every batch is in, the end of the file too. */
  const commit = (end?: { bytes: number; broken?: SkippedRow }) => {
    turns?.hold(PATIENCE_MS);
    // Timed from here: the writes of the service it let go first leave the transaction as long as ever.
    const started = performance.now();
    const yieldAfter = Math.min(YIELD_AFTER_MAX_MS, Math.max(YIELD_AFTER_MIN_MS, WAIT_BUDGET_MS - commitMs));
    let insertedAt = 0;
    const inserted: string[] = [];
    const skipped: SkippedRow[] = [];
    let rows = 0;
    const next = (): CustomerRecord | undefined => {
      // A batch whose records are all in: its skipped rows and its reach in the file go with this transaction.
      while (batches.length > 0 && taken >= batches[0]!.records.length) {
        const done = batches.shift()!;
        parsed.consumed(); // room for one more batch ahead
        for (const row of done.skipped) skipped.push(row);
        rows += done.skipped.length;
        waitingRows -= done.skipped.length;
        bytes = Math.max(bytes, done.bytes);
        taken = 0;
      }
      insertedAt = performance.now();
      if (batches.length === 0) return undefined;
      if (inserted.length >= MIN_ROWS) {
        const elapsed = insertedAt - started;
        if (elapsed >= longMs || inserted.length >= MAX_ROWS) return undefined;
        if (turns && elapsed >= yieldAfter && (turns.wanted() || turns.importsQueued())) return undefined;
      }
      const packed = batches[0]!.records[taken++]!;
      inserted.push(packed);
      rows++;
      waitingRows--;
      return unpackRow(packed).record;
    };
    let result: { stored: Imported[]; generation: number };
    try {
      const also = (stored: Imported[]) => {
        let imported = 0;
        let updated = 0;
        stored.forEach((s, i) => {
          if (s === undefined || s === null) {
            const { line, record } = unpackRow(inserted[i]!);
            skipped.push({ line, email: record.email, reason: s === null ? repeatedReason(record.email) : duplicateReason(record.email) });
          } else if (isReplaced(s)) updated++;
          else imported++;
        });
        if (end && batches.length === 0) {
          bytes = Math.max(bytes, end.bytes);
          if (end.broken) {
            rows++;
            skipped.push(end.broken);
          }
          finished = true;
        }
        deps.progress.record(job.seq, { bytes, rows, imported, updated }, skipped);
      };
      result = seen ? deps.writes.upsertWith(next, job.startedAt, seen, also) : deps.writes.insertWith(next, job.startedAt, also);
    } finally {
      turns?.release();
    }
    commitMs = 0.7 * commitMs + 0.3 * (performance.now() - insertedAt);
    deps.onCommit(commitOf(job.seq, result));
  };

  try {
    let end: { bytes: number; broken?: SkippedRow } | undefined;
    for (;;) {
      for (let message = parsed.take(); message; message = parsed.take()) {
        if (message.type === 'end') end = message;
        else {
          batches.push(message);
          waitingRows += message.rows;
        }
      }
      if (end && batches.length === 0) {
        if (!finished) commit(end);
        return end.broken ? 'failed' : 'completed';
      }
      if (waitingRows < READY_ROWS && !end) {
        await parsed.more();
        continue;
      }
      commit(end);
      // Between transactions: requests of the service, import requests and the parser's batches get their turn.
      if (!turns) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      else if (turns.importsQueued()) await new Promise((resolve) => setTimeout(resolve, 1));
      else await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    parsed.close();
  }
}

/** Returns what a committed transaction changed, as columns for the change feed. */
function commitOf(seq: number, { stored, generation }: { stored: Imported[]; generation: number }): JobCommit {
  const inserted: StoredCustomer[] = [];
  const before: StoredCustomer[] = [];
  const after: StoredCustomer[] = [];
  for (const s of stored) {
    if (s === undefined || s === null) continue;
    if (!isReplaced(s)) inserted.push(s);
    else if (s.before !== s.after) {
      before.push(s.before);
      after.push(s.after);
    }
  }
  const commit: JobCommit = { seq, generation, inserted: toColumns(inserted) };
  if (after.length > 0) commit.replaced = { before: toColumns(before), after: toColumns(after) };
  return commit;
}

/**
 * Listens to the parser on `port`: `take` returns a message received (or undefined), `more` resolves when another
 * arrives, `consumed` asks for one more batch (at most BATCHES_AHEAD are ahead of the commits), `close` tells the
 * parser to stop.
 */
export function receiveBatches(port: MessagePort) {
  const received: ParserMessage[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  let ended = false;
  port.on('message', (message: ParserMessage) => {
    received.push(message);
    wake?.();
  });
  port.on('close', () => {
    closed = true;
    wake?.();
  });
  port.postMessage(BATCHES_AHEAD);
  return {
    take(): ParserMessage | undefined {
      const message = received.shift();
      if (message?.type === 'end') ended = true;
      return message;
    },
    /** A batch taken has been committed whole: the parser may send one more. */
    consumed(): void {
      if (!closed) port.postMessage(1);
    },
    async more(): Promise<void> {
      if (received.length > 0) return;
      // Messages posted before the parser closed its side arrive before the close; after it, nothing more will come.
      if (closed || ended) throw new Error('The CSV parser stopped before the end of the file.');
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    },
    close(): void {
      port.close();
    },
  };
}
