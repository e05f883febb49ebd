// CSV import jobs on the service's side: an upload's header row is checked as it arrives (a file without an email
// column is refused before any row is read), the file goes to disk as it streams in, and the job is handed to the
// import runner (import-runner.ts), which runs the jobs one at a time in arrival order. Knows no HTTP: it takes the
// body as a stream of bytes.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../domain/errors.ts';
import type { OnExisting } from '../store/writes.ts';
import { HEADER_LIMIT, readHeader, type ColumnMapping } from './csv-columns.ts';
import { previewCsv, type CsvPreview } from './csv-preview.ts';
import type { JobRunOptions } from './import-runner.ts';
import type { ImportJob, ImportJobStore, NewJob, SkippedRow } from './job-store.ts';

export interface ImportJobsOptions extends JobRunOptions {
  /** IMPORT_MAX_BYTES: the largest file accepted. */
  maxBytes: number;
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

/** The import jobs as the API sees them. */
export interface ImportJobs {
  /**
   * Reads an upload to disk and queues its job; resolves to the job, `running` until it ends. Rejects with
   * `validation_failed` on `body` for a file without a header row naming an email column (read from its first
   * line, before any row) and on `columns` for a mapping that does not fit it, `payload_too_large` past
   * IMPORT_MAX_BYTES, and what reading the body throws.
   */
  accept(body: AsyncIterator<Buffer>, upload: Upload): Promise<ImportJob>;
  /**
   * Reads only the first bytes of an upload and stores nothing: resolves to how its columns are read, its first
   * records as they would be stored, and their problems (csv-preview.ts). The caller discards the rest of the body.
   * Rejects as `accept` (`payload_too_large` for a declared length past IMPORT_MAX_BYTES).
   */
  preview(body: AsyncIterator<Buffer>, upload: Omit<Upload, 'fileName' | 'createdBy'>): Promise<CsvPreview>;
  /** IMPORT_MAX_BYTES: the most a client may send of one upload. */
  readonly maxBytes: number;
  /** Resolves to the job; rejects with `not_found`. */
  getJob(id: string): Promise<ImportJob>;
  /** Resolves to one page of jobs, newest first, and how many there are. */
  listJobs(page: number, limit: number): Promise<{ items: ImportJob[]; total: number }>;
  /** Resolves, once the job is found (else rejects with `not_found`), to its skipped rows in line order, a page at a time. */
  skippedRows(id: string): Promise<AsyncIterable<SkippedRow[]>>;
}

/**
 * What runs the jobs, on either engine: the ImportRunner (import-runner.ts) on SQLite, the PostgreSQL runner
 * (../postgres/import-jobs.ts). Uploads are read to `uploadPath(id)`, then `addJob` queues them.
 */
export interface JobQueue {
  uploadPath(id: string): string;
  addJob(job: NewJob): Promise<ImportJob>;
  readonly jobs: Pick<ImportJobStore, 'getJob' | 'listJobs' | 'skippedRows'>;
}

/** Returns the import jobs run by `runner` (whose jobs have been started); `emailsStored` serves the previews. */
export function createImportJobs(
  runner: JobQueue,
  emailsStored: (emails: readonly string[]) => Promise<Set<string>>,
  { maxBytes, clock }: Pick<ImportJobsOptions, 'maxBytes' | 'clock'>,
): ImportJobs {
  const tooLarge = () => new AppError('payload_too_large', `Import files are limited to ${maxBytes} bytes (IMPORT_MAX_BYTES).`);

  return {
    async accept(body, upload) {
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
      const path = runner.uploadPath(id);
      try {
        await pipeline(rest, createWriteStream(path, { flags: 'wx' }));
      } catch (error) {
        await rm(path, { force: true });
        throw error;
      }
      return runner.addJob({ id, fileName: upload.fileName, columns, ignored, onExisting, createdBy: upload.createdBy });
    },

    async preview(body, upload) {
      if (upload.declaredBytes !== undefined && upload.declaredBytes > maxBytes) throw tooLarge();
      return previewCsv(body, { maxBytes, lengthKnown: upload.declaredBytes !== undefined, tooLarge, clock, columns: upload.columns, onExisting: upload.onExisting ?? 'skip', emailsStored });
    },

    maxBytes,
    getJob: (id) => runner.jobs.getJob(id),
    listJobs: (page, limit) => runner.jobs.listJobs(page, limit),
    skippedRows: (id) => runner.jobs.skippedRows(id),
  };
}
