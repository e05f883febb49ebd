// The server side of a CSV download: headers once, rows as the client takes them, a turn of the event loop every
// few hundred rows so no other request waits behind a long file, and cells a spreadsheet would run as formulas
// defused.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Context } from './context.ts';
import { drained } from './drain.ts';

/** Rows written between two turns of the event loop. */
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

/**
 * Answers the request with `text/csv` as an attachment named `fileName`: the header line, then each row, waiting
 * while the client is not reading. Stops when the client leaves (`ctx.signal`). Resolves once the answer is sent.
 */
export async function sendCsv(ctx: Context, fileName: string, header: readonly string[], rows: Iterable<readonly (string | number | null | undefined)[]>): Promise<void> {
  const { res, signal } = ctx;
  res.writeHead(200, {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${fileName.replace(/["\\\r\n]/g, '_')}"`,
    'cache-control': 'no-store',
  });
  const gone = () => signal.aborted || res.destroyed;
  const write = async (chunk: string) => {
    if (!res.write(chunk) && !gone()) await drained(res, signal);
  };

  await write(`${header.map(csvCell).join(',')}\r\n`);
  let chunk = '';
  let count = 0;
  for (const row of rows) {
    chunk += `${row.map(csvCell).join(',')}\r\n`;
    if (++count % ROWS_PER_TURN !== 0) continue;
    await write(chunk);
    chunk = '';
    await nextTurn();
    if (gone()) return;
  }
  if (chunk) await write(chunk);
  if (!gone()) res.end();
}
