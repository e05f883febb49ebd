// Running one CSV import job on the import writer's connection. A parser thread (parser.thread.ts) reads and checks
// the rows while this thread writes them, in transactions sized to take about a tenth of a second: each holds its
// rows, its skipped rows and the job's counts, so a crash loses nothing the counts report, and other writers never
// wait long for the lock.
import { MessageChannel } from 'node:worker_threads';
import type { CustomerRecord } from '../../domain/customers.ts';
import { startWorkerThread } from '../../db/worker-thread.ts';
import type { StoredCustomer } from '../store/rows.ts';
import type { CustomerWrites } from '../store/writes.ts';
import type { jobProgressWriter, JobToRun, SkippedRow } from './job-store.ts';
import type { ParsedBatch, ParserMessage } from './parser.thread.ts';
import { duplicateReason } from './row-check.ts';

/** How long one transaction should take: other writers wait at most about this long for the lock. */
const TRANSACTION_MS = 100;
const FIRST_BATCH = 2_000;
const MIN_BATCH = 500;
const MAX_BATCH = 25_000;
/** A transaction is at most this many times larger than the last: one whose rows suddenly cost more stays short. */
const MAX_GROWTH = 1.5;
/**
 * A pause after each transaction, so a writer of the service waiting for the lock gets it: SQLite's busy handler
 * retries at intervals of up to 25 ms in the first few hundred, and without a gap it could wait out many commits.
 */
const GAP_MS = 30;
/** Parsed batches asked for ahead of the writer, so parsing never waits for a commit nor runs far ahead of it. */
const BATCHES_AHEAD = 4;

/** What one committed transaction of a job stored, for the change feed. */
export interface JobCommit {
  seq: number;
  generation: number;
  stored: StoredCustomer[];
}

export interface CsvJobDeps {
  writes: CustomerWrites;
  progress: ReturnType<typeof jobProgressWriter>;
  /** Told after each transaction commits. */
  onCommit(commit: JobCommit): void;
}

/**
 * Imports the file at `path` for the job; resolves to `completed`, or `failed` when the file cannot be read to its
 * end (what was committed before stays, and the reason is its last skipped row). Rows that break a rule, repeat a
 * stored email or cannot be parsed are skipped with their line. Throws what a transaction throws.
 */
export async function runCsvJob(job: JobToRun, path: string, deps: CsvJobDeps): Promise<'completed' | 'failed'> {
  let records: { line: number; record: CustomerRecord }[] = [];
  let skipped: SkippedRow[] = [];
  let rows = 0;
  let bytes = 0;
  let batchSize = FIRST_BATCH;

  const commit = () => {
    const started = performance.now();
    const batch = records;
    records = [];
    const { stored, generation } = deps.writes.insertWith(
      batch.map((r) => r.record),
      job.startedAt,
      (result) => {
        result.forEach((s, i) => {
          if (s) return;
          const { line, record } = batch[i]!;
          skipped.push({ line, email: record.email, reason: duplicateReason(record.email) });
        });
        deps.progress.record(job.seq, { bytes, rows, imported: result.filter(Boolean).length }, skipped);
      },
    );
    rows = 0;
    skipped = [];
    deps.onCommit({ seq: job.seq, generation, stored: stored.filter((s): s is StoredCustomer => s !== undefined) });
    // Sized by the last one: rows cost more as the indexes grow, and less once their pages are cached.
    const elapsed = Math.max(1, performance.now() - started);
    const rowsDone = Math.max(batch.length, MIN_BATCH);
    batchSize = Math.round(Math.min(MAX_BATCH, rowsDone * MAX_GROWTH, Math.max(MIN_BATCH, rowsDone * (TRANSACTION_MS / elapsed))));
  };

  const add = (parsed: ParsedBatch) => {
    for (const r of parsed.records) records.push(r);
    for (const s of parsed.skipped) skipped.push(s);
    rows += parsed.rows;
    bytes = parsed.bytes;
  };

  for await (const message of parsedBatches(job, path)) {
    if (message.type === 'batch') {
      add(message);
      if (records.length + skipped.length < batchSize) continue;
      commit();
      await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      continue;
    }
    bytes = message.bytes;
    if (message.broken) {
      rows++;
      skipped.push(message.broken);
    }
    commit();
    return message.broken ? 'failed' : 'completed';
  }
  throw new Error('The CSV parser stopped without saying why.');
}


/** Starts the parser thread on the file and yields its messages, asking for more as they are taken. */
async function* parsedBatches(job: JobToRun, path: string): AsyncGenerator<ParserMessage> {
  const { port1, port2 } = new MessageChannel();
  const thread = startWorkerThread(new URL('./parser.thread.ts', import.meta.url), { path, columns: job.columns, startedAt: job.startedAt, port: port2 }, [port2]);
  const received: ParserMessage[] = [];
  let wake: (() => void) | undefined;
  let failure: unknown;
  let exited = false;
  port1.on('message', (message: ParserMessage) => {
    received.push(message);
    wake?.();
  });
  thread.on('error', (error) => {
    failure = error;
    wake?.();
  });
  thread.on('exit', () => {
    exited = true;
    wake?.();
  });
  try {
    port1.postMessage(BATCHES_AHEAD);
    for (;;) {
      const message = received.shift();
      if (message) {
        if (message.type === 'batch') port1.postMessage(1);
        yield message;
        if (message.type === 'end') return;
        continue;
      }
      if (failure) throw failure;
      // Messages posted before the exit arrive before it is reported; after it, nothing more will come.
      if (exited) throw new Error('The CSV parser thread stopped before the end of the file.');
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    port1.close();
    await thread.terminate();
  }
}
