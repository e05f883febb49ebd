// The server side of a CSV download: headers once, then the file in pieces as the client takes them, a turn of the
// event loop between pieces so no other request waits behind a long file, and cells a spreadsheet would run as
// formulas defused.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Context } from './context.ts';
import { drained } from './drain.ts';

/** The cells of one line. */
export type CsvCells = readonly (string | number | null | undefined)[];

/** Rows written between two turns of the event loop by `sendCsv`. */
const ROWS_PER_TURN = 500;

// A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection").
const FORMULA_START = /^[=+\-@\t\r]/;

/** Returns one cell as RFC 4180 writes it: quoted when needed, with a leading `'` when it would start a formula. */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Returns the cells as one CSV line, its CRLF included. */
export function csvLine(cells: CsvCells): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/**
 * Answers the request with `text/csv` as an attachment named `fileName`: the header line, then each row, waiting
 * while the client is not reading. Stops when the client leaves (`ctx.signal`). Resolves once the answer is sent.
 */
export function sendCsv(ctx: Context, fileName: string, header: readonly string[], rows: Iterable<CsvCells>): Promise<void> {
  return streamCsv(ctx, fileName, header, linesInGroups(rows));
}

/** Returns the rows as CSV text, ROWS_PER_TURN lines a piece. */
function* linesInGroups(rows: Iterable<CsvCells>): Generator<string> {
  let piece = '';
  let count = 0;
  for (const row of rows) {
    piece += csvLine(row);
    if (++count % ROWS_PER_TURN !== 0) continue;
    yield piece;
    piece = '';
  }
  if (piece) yield piece;
}

/**
 * Answers the request with `text/csv` as an attachment named `fileName`: the header line, then each piece of text
 * (whole lines, possibly none) that `pieces` gives, one piece per turn of the event loop, waiting while the client is
 * not reading, so `pieces` is asked for its next one only when the client has taken the last. When the client leaves
 * (`ctx.signal`) it stops asking and ends `pieces` (its `return()`). A HEAD request gets the headers only. Resolves
 * once the answer is sent; rejects with what `pieces` threw (the listener then cuts the connection).
 */
export async function streamCsv(ctx: Context, fileName: string, header: readonly string[], pieces: Iterable<string> | AsyncIterable<string>): Promise<void> {
  const { res, signal } = ctx;
  res.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${fileName.replace(/["\\\r\n]/g, '_')}"`,
    'cache-control': 'no-store',
  });
  if (ctx.method === 'HEAD') {
    res.end();
    return;
  }
  const gone = () => signal.aborted || res.destroyed;
  const write = async (text: string) => {
    if (!res.write(text) && !gone()) await drained(res, signal);
  };

  await write(csvLine(header));
  for await (const piece of pieces) {
    if (piece) await write(piece);
    await nextTurn();
    if (gone()) return; // leaving the loop ends `pieces`
  }
  if (!gone()) res.end();
}
