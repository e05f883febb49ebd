// CSV import jobs on the service's side: an upload's header row is checked as it arrives (a file without an email
// column is refused before any row is read), the file goes to disk as it streams in, and the jobs run one at a
// time in arrival order on the import writer (imports.ts). Knows no HTTP: it takes the body as a stream of bytes.
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Clock } from '../../domain/clock.ts';
import { AppError } from '../../domain/errors.ts';
import type { OnExisting } from '../store/writes.ts';
import { HEADER_LIMIT, readHeader, type ColumnMapping } from './csv-columns.ts';
import { previewCsv, type CsvPreview } from './csv-preview.ts';
import type { CustomerImports } from './imports.ts';
import { createImportJobStore, type ImportJob, type JobToRun } from './job-store.ts';
import type { Db } from '../../db/database.ts';

export interface ImportJobsOptions {
  /** Where uploads wait for their job; emptied at start-up. */
  folder: string;
  /** IMPORT_MAX_BYTES: the largest file accepted. */
  maxBytes: number;
  clock: Clock;
  /** Told when a job has ended, with the job as it ended. */
  onEnd?: (job: ImportJob) => void;
  /**
   * Called inside the transaction that ends a job, with the job as it ended: what it writes commits with the job's
   * end or not at all (the webhook outbox). It must not await.
   */
  onFinish?: (job: ImportJob) => void;
}

/** What came with an upload besides its bytes. */
export interface Upload {
  fileName: string | undefined;
  /** The declared length, when the client declared one. */
  declaredBytes: number | undefined;
  createdBy: string;
  /** Header names mapped to fields by the client, before the built-in names and aliases. */
  columns?: ColumnMapping;
  /** What to do with a row whose email is stored; `skip` unless given. */
  onExisting?: OnExisting;
}

export type ImportJobs = ReturnType<typeof createImportJobs>;

/**
 * Returns the import jobs of `db`. Jobs a stopped process left `running` are marked `interrupted` (their committed
 * rows and counts stay), and their uploads removed.
 */
export function createImportJobs(
  db: Db,
  { runJob, emailsStored }: { runJob: CustomerImports['runJob']; emailsStored: (emails: readonly string[]) => Set<string> },
  { folder, maxBytes, clock, onEnd, onFinish }: ImportJobsOptions,
) {
  const store = createImportJobStore(db);
  const finishJob = db.transaction((job: JobToRun, status: 'completed' | 'failed') => {
    store.finishJob(job.seq, status, clock());
    onFinish?.(store.getJob(job.id));
  });
  store.interruptRunning(clock());
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  const fileOf = (id: string) => join(folder, `${id}.csv`);

  const waiting: JobToRun[] = [];
  let running = false;
  const runNext = () => {
    const job = running ? undefined : waiting.shift();
    if (!job) return;
    running = true;
    runJob(job, fileOf(job.id), (status) => {
      finishJob.immediate(job, status);
      // Off the event loop: unlinking a file of 87 MB held it for 158 ms.
      void rm(fileOf(job.id), { force: true }).catch(() => {});
      running = false;
      onEnd?.(store.getJob(job.id));
      runNext();
    });
  };

  const tooLarge = () => new AppError('payload_too_large', `Import files are limited to ${maxBytes} bytes (IMPORT_MAX_BYTES).`);

  return {
    /**
     * Reads an upload to disk and queues its job; returns the job, `running` until it ends. Throws
     * `validation_failed` on `body` for a file without a header row naming an email column (read from its first
     * line, before any row) and on `columns` for a mapping that does not fit it, `payload_too_large` past
     * IMPORT_MAX_BYTES, and what reading the body throws.
     */
    async accept(body: AsyncIterator<Buffer>, upload: Upload): Promise<ImportJob> {
      if (upload.declaredBytes !== undefined && upload.declaredBytes > maxBytes) throw tooLarge();
      let head = Buffer.alloc(0);
      let lineEnd = -1;
      let ended = false;
      while (lineEnd < 0 && !ended) {
        const next = await body.next();
        if (next.done) ended = true;
        else head = Buffer.concat([head, next.value]);
        lineEnd = head.indexOf(0x0a);
        if (lineEnd < 0 && head.length > HEADER_LIMIT) break;
      }
      if (head.length > maxBytes) throw tooLarge();
      const { columns, ignored } = readHeader(head, upload.columns);
      const onExisting = upload.onExisting ?? 'skip';

      const id = randomUUID();
      let size = head.length;
      const rest = async function* () {
        yield head;
        for (let next = await body.next(); !next.done; next = await body.next()) {
          size += next.value.length;
          if (size > maxBytes) throw tooLarge();
          yield next.value;
        }
      };
      try {
        await pipeline(rest, createWriteStream(fileOf(id), { flags: 'wx' }));
      } catch (error) {
        await rm(fileOf(id), { force: true });
        throw error;
      }
      const now = clock();
      const { job, seq } = store.insertJob({ id, fileName: upload.fileName, columns, ignored, onExisting, createdBy: upload.createdBy }, now);
      waiting.push({ seq, id, columns, onExisting, startedAt: now.getTime() });
      runNext();
      return job;
    },

    /**
     * Reads only the first bytes of an upload and stores nothing: returns how its columns are read, its first records
     * as they would be stored, and their problems (csv-preview.ts). The caller discards the rest of the body. Throws
     * as `accept` (`payload_too_large` for a declared length past IMPORT_MAX_BYTES).
     */
    async preview(body: AsyncIterator<Buffer>, upload: Omit<Upload, 'fileName' | 'createdBy'>): Promise<CsvPreview> {
      if (upload.declaredBytes !== undefined && upload.declaredBytes > maxBytes) throw tooLarge();
      return previewCsv(body, { maxBytes, lengthKnown: upload.declaredBytes !== undefined, tooLarge, clock, columns: upload.columns, onExisting: upload.onExisting ?? 'skip', emailsStored });
    },

    /** IMPORT_MAX_BYTES: the most a client may send of one upload. */
    maxBytes,
    getJob: store.getJob,
    listJobs: store.listJobs,
    skippedRows: store.skippedRows,
  };
}
