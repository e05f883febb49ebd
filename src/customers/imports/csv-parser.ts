// The CSV parser of an import job, on the event loop: it reads the file as a stream, checks each row (csv-parse, then
// the customer rules) and posts batches of checked rows through a MessagePort to the job on the import writer thread,
// only as many as the writer has asked for, so a file of any size holds about two windows of rows (a few MB each) in
// memory at most. It runs here rather than on a thread of its own: such a thread held about 40 MB (its heap and the
// rest of an isolate) for work that takes the event loop a few milliseconds at a time (a piece of 16 KB of the file,
// the sort of a run of rows, the merge of a batch from a window's runs).
//
// Rows are posted a window at a time, sorted by email: a batch of the window then covers a narrow range of emails
// (and, emails being first.last@..., of names), so the writer's transaction touches a few hundred pages of those two
// indexes instead of one page per row. Duplicates of an email within the window keep their file order (a stable sort),
// so the first row with an email is the one stored, as in file order.
import { createReadStream } from 'node:fs';
import type { MessagePort } from 'node:worker_threads';
import { parse, type Options } from 'csv-parse';
import { rowInput, type ColumnMap } from './csv-columns.ts';
import type { SkippedRow } from './job-store.ts';
import { packRow } from './packed-rows.ts';
import { brokenFileReason, unreadableReason } from './reasons.ts';
import { recordLines } from './record-lines.ts';
import { rowChecker } from './row-check.ts';

/**
 * Rows per window sorted by email: the more, the narrower each batch's range of emails (and the more memory). The
 * first windows are smaller, so the writer starts soon. 80,000 rows made jobs no faster, into an empty base or a
 * million, and held about 10 MB more.
 */
const WINDOW_ROWS = 40_000;
const FIRST_WINDOW_ROWS = 10_000;
/**
 * Rows are sorted in runs of this many as they are parsed, and each batch merged from its window's runs as it is
 * posted: a window of 40,000 rows sorted at once held the event loop 50-105 ms on a slow machine (requests waited
 * behind it), merged at once 21-27 ms; a run or a batch takes a few milliseconds.
 */
const RUN_ROWS = 5_000;
/**
 * The file is read this many bytes at a time, and each piece parsed and checked in one go on the event loop: pieces
 * of 64 KB (about 750 rows) held it 30-70 ms on a slow machine, and requests waited behind them.
 */
const READ_BYTES = 16 * 1024;
/** Rows per batch posted to the writer. */
const BATCH_ROWS = 5_000;
/** A window also ends at this many characters of packed rows, so long rows cannot make it large. */
const WINDOW_CHARS = 8_000_000;
/**
 * Parsing goes on while less than a window waits to be posted (so the next window is ready when the writer has
 * taken the last): at most about two windows of rows are held here.
 */
const READY_BATCHES = WINDOW_ROWS / BATCH_ROWS;

/**
 * A batch of the file: checked rows with their lines, packed (packed-rows.ts) in email order, skipped rows, how many
 * rows of the file it stands for (its records and skipped rows), and how far into the file the rows before it and it
 * reach.
 */
export interface ParsedBatch {
  records: string[];
  skipped: SkippedRow[];
  rows: number;
  bytes: number;
}

/** What the parser posts: batches, then the end (with the reason when the file could not be read to its end). */
export type ParserMessage = ({ type: 'batch' } & ParsedBatch) | { type: 'end'; bytes: number; broken?: SkippedRow };

/** A message waiting to be posted: a batch's records are merged from its window's runs when it is posted. */
type Ready = ({ type: 'batch'; merge: ReturnType<typeof runMerger>; part: number } & Omit<ParsedBatch, 'records'>) | Extract<ParserMessage, { type: 'end' }>;

/** A record as the parser hands it on: its cells, its first line in the file, and where it ends (bytes). */
interface ParsedRow {
  cells: string[];
  line: number;
  bytes: number;
}

/** The file, how its columns map to fields, the job's start (the rules' "now"), and the port to post batches to. */
export interface ParserInput {
  path: string;
  columns: ColumnMap;
  startedAt: number;
  port: MessagePort;
}

/**
 * Parses the file, posting a batch for each credit the other side sends (a number), then the end. Never throws: what
 * stops the reading (the file, or a fault here) ends the file with its reason. Stops when the other side closes.
 */
export function parseCsvFile({ path, columns, startedAt, port }: ParserInput): void {
  const check = rowChecker(() => new Date(startedAt));
  let credit = 0;
  /** The first line of each record, in the order the parser reads them: it runs ahead of the records handed on. */
  const firstLine = recordLines();
  /** Where the last record handed on ends in the file. */
  let readBytes = 0;
  let lastSkipped = 0;
  let header = true;
  /** Where the rows posted so far end in the file. */
  let postedBytes = 0;
  /** The window's rows: sorted runs, and the run being filled. */
  let runs: string[][] = [];
  let run: string[] = [];
  let windowRecords = 0;
  let windowChars = 0;
  let windowRows = FIRST_WINDOW_ROWS;
  let windowSkipped: SkippedRow[] = [];
  /** Batches ready to post, in order, each with the merge of its window's runs; the end message last once the file is read. */
  const ready: Ready[] = [];
  /** Characters of the packed rows in `ready`. */
  let readyChars = 0;
  const waitingIsFull = () => ready.length >= READY_BATCHES || readyChars >= WINDOW_CHARS;
  let ended = false;
  let closed = false;

  const options: Options<ParsedRow, string[]> = {
    bom: true,
    // A quote inside an unquoted cell is taken as a character: exports by hand often have them.
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    // Each record carries its own line and end: by the time the stream hands it on, the parser may be rows ahead.
    on_record: (cells, context) => ({ cells, line: firstLine(cells, context.lines), bytes: context.bytes }),
    on_skip: (error) => {
      const at = firstLine.afterLast();
      if (at === lastSkipped) return undefined; // one row may break more than one rule
      lastSkipped = at;
      windowSkipped.push({ line: at, email: null, reason: unreadableReason(error?.code) });
      return undefined;
    },
  };
  const file = createReadStream(path, { highWaterMark: READ_BYTES });
  // parse()'s typings only know records that stay arrays of cells.
  const parser = file.pipe(parse(options as unknown as Options));

  /** Queues the window as batches in email order; the window's skipped rows go with its first batch. */
  const closeWindow = () => {
    const bytes = ended ? parser.info.bytes : readBytes;
    if (run.length > 0) runs.push(run.sort());
    const merge = runMerger(runs);
    const records = windowRecords;
    const skipped = windowSkipped;
    runs = [];
    run = [];
    windowRecords = 0;
    windowSkipped = [];
    readyChars += windowChars;
    windowChars = 0;
    const batches = Math.max(1, Math.ceil(records / BATCH_ROWS));
    for (let i = 0; i < batches; i++) {
      const part = Math.min(BATCH_ROWS, records - i * BATCH_ROWS);
      const own = i === 0 ? skipped : [];
      // A batch in the middle of a window reaches a share of the way through it: an estimate, never past the window.
      const reach = i === batches - 1 ? bytes : postedBytes + Math.floor(((bytes - postedBytes) * (i + 1)) / batches);
      if (part + own.length > 0 || i === batches - 1) ready.push({ type: 'batch', merge, part, skipped: own, rows: part + own.length, bytes: reach });
    }
    postedBytes = bytes;
  };

  const pump = () => {
    if (closed) return;
    // The end needs no credit: it holds no rows.
    while (ready.length > 0 && (credit > 0 || ready[0]!.type === 'end')) {
      const waiting = ready.shift()!;
      let message: ParserMessage;
      if (waiting.type === 'batch') {
        const { merge, part, ...batch } = waiting;
        const records = merge.take(part);
        for (const row of records) readyChars -= row.length;
        message = { ...batch, records };
      } else message = waiting;
      port.postMessage(message);
      if (message.type === 'end') {
        port.close();
        return;
      }
      credit--;
    }
    if (!ended && !waitingIsFull()) parser.resume();
  };

  /** Ends the file where the reading stopped, with the reason. */
  const breakOff = (error: unknown) => {
    if (ended) return;
    ended = true;
    file.destroy();
    if (windowRecords + windowSkipped.length > 0) closeWindow();
    // A system error's message names the file's path on this machine: only its code goes out.
    const system = error as NodeJS.ErrnoException | undefined;
    const cause = typeof system?.syscall === 'string' ? system.code : error instanceof Error ? error.message : String(error);
    const reason = brokenFileReason(String(cause));
    ready.push({ type: 'end', bytes: parser.info.bytes, broken: { line: parser.info.lines, email: null, reason } });
    pump();
  };

  parser.pause();
  port.on('message', (more: number) => {
    credit += more;
    pump();
  });
  // The job ended first (the writer stopped, or the job failed): nothing more to read.
  port.on('close', () => {
    closed = true;
    ended = true;
    file.destroy();
    parser.destroy();
  });
  parser.on('data', ({ cells, line, bytes }: ParsedRow) => {
    if (ended) return;
    readBytes = bytes;
    try {
      if (header) {
        header = false; // read by the service when the file arrived
        return;
      }
      const checked = check(rowInput(cells, columns));
      if (checked.ok) {
        const packed = packRow(line, checked.record);
        windowRecords++;
        windowChars += packed.length;
        if (run.push(packed) === RUN_ROWS) {
          runs.push(run.sort());
          run = [];
        }
      } else windowSkipped.push({ line, email: checked.email, reason: checked.reason });
      if (windowRecords + windowSkipped.length >= windowRows || windowChars >= WINDOW_CHARS) {
        closeWindow();
        windowRows = Math.min(WINDOW_ROWS, windowRows * 2);
        if (waitingIsFull()) parser.pause();
        pump();
      }
    } catch (error) {
      // On the event loop a fault must not reach the process: it ends this file instead.
      parser.pause();
      breakOff(error);
    }
  });
  parser.on('end', () => {
    if (ended) return;
    ended = true;
    if (windowRecords + windowSkipped.length > 0) closeWindow();
    ready.push({ type: 'end', bytes: parser.info.bytes });
    pump();
  });
  parser.on('error', breakOff);
  file.on('error', breakOff); // pipe() passes on no error of its source
}

/**
 * Hands out the rows of sorted runs in order, `take(n)` at a time. Packed rows begin with the email, then the line:
 * a plain comparison orders them by email, repeats in file order, and no two are equal.
 */
function runMerger(runs: readonly string[][]) {
  const next = runs.map(() => 0);
  return {
    take(n: number): string[] {
      const out: string[] = [];
      while (out.length < n) {
        let best = -1;
        let first: string | undefined;
        for (let r = 0; r < runs.length; r++) {
          const row = runs[r]![next[r]!];
          if (row !== undefined && (first === undefined || row < first)) {
            best = r;
            first = row;
          }
        }
        if (first === undefined) break;
        next[best]!++;
        out.push(first);
      }
      return out;
    },
  };
}
