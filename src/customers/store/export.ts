// The customers within a segment's bounds, read for a download: in id order, one window of ids per statement on a
// connection of the export's own, at most ROWS_PER_STEP rows each. Each step is one short statement, so a caller that lets the event
// loop turn between steps keeps every other request served, and a selective segment never scans the whole table in one
// go. Knows no HTTP.
import { ANY_STATUS, statusesOf, type Bounds } from '../../domain/segments.ts';
import { EXPORT_COLUMNS, type ExportRow } from './fields.ts';
import { openReadConnection, type Db } from '../../db/database.ts';

export type { ExportRow };

/**
 * Rows a step reads at most: about 5 ms of SQL and as much again to write them as CSV. A window reaching into a dense
 * run of matches (a country imported at once) stops there, and the next window starts after its last row.
 */
const ROWS_PER_STEP = 2048;
/** Ids per statement: the first window, and the range the next one is sized within. */
const FIRST_WINDOW = 2048;
const SMALLEST_WINDOW = 1024;
/** A window with no match scans this many rows in a few milliseconds. */
const LARGEST_WINDOW = 65_536;
/** Windows grow while a step reads fewer rows than this in less time than FAST_MS, and shrink above SLOW_MS. */
const FEW_ROWS = ROWS_PER_STEP / 2;
const FAST_MS = 4;
const SLOW_MS = 12;

/** Stored values are safe integers; an open bound becomes a finite number SQLite compares with them. */
const finite = (n: number) => Math.min(Number.MAX_VALUE, Math.max(-Number.MAX_VALUE, n));

/** The statements of one export, prepared on the connection it reads through. */
function exportStatements(db: Db) {
  // NOT INDEXED: the rowid range is the only access path, so a country or an amount never sends the planner to an
  // index that would read all of that country's customers for every window. The rowid is still used for the range.
  // Lists of countries and statuses come as JSON arrays: one statement whatever their length, and SQLite reads each
  // list into a small index once per statement run. A list that would let every row through comes as NULL.
  const window = db
    .prepare(
      `SELECT ${EXPORT_COLUMNS}
       FROM customers NOT INDEXED
       WHERE id > @after AND id <= @through
         AND (@countryKeys IS NULL OR country_key IN (SELECT value FROM json_each(@countryKeys)))
         AND (@excludedCountryKeys IS NULL OR country_key NOT IN (SELECT value FROM json_each(@excludedCountryKeys)))
         AND (@statuses IS NULL OR status IN (SELECT value FROM json_each(@statuses)))
         AND total_transactions BETWEEN @transactionsLo AND @transactionsHi
         AND amount_cents BETWEEN @centsLo AND @centsHi
         AND last_activity_at BETWEEN @activityLo AND @activityHi
       ORDER BY id
       LIMIT ${ROWS_PER_STEP}`,
    )
    .raw();
  const lastId = db.prepare('SELECT coalesce(max(id), 0) FROM customers').pluck();
  return { window, lastId };
}

/** The customers within a segment's bounds, read for a download, on either engine. */
export interface CustomerExport {
  /**
   * Returns the customers within `bounds` (none for `null`) that exist when the reading starts, in id order, a batch
   * at a time (possibly empty): each at most once, none added after the start. SQLite reads each batch as it is when
   * its turn comes (a customer deleted before then does not come); PostgreSQL reads them all from the snapshot of the
   * start. Nothing is read before the first `next()`; stop early with `return()`.
   */
  matchingCustomers(bounds: Bounds | null): AsyncGenerator<ExportRow[], void, undefined>;
}

/**
 * Returns the reader of customers within bounds. Each export reads through a connection of its own with SQLite's
 * small default page cache, closed when it ends: every page of the table passes through once, and through the
 * service's connection they filled its 32 MiB cache (memory kept, and the pages other queries want pushed out).
 */
export function createCustomerExport(db: Db): CustomerExport {
  return {
    // Each step runs one statement over the next window of ids and yields what it found: one changed before its
    // window is read comes as changed.
    async *matchingCustomers(bounds) {
      if (!bounds) return;
      const reader = db.memory ? db : openReadConnection(db);
      try {
        yield* windowsWithin(exportStatements(reader), bounds);
      } finally {
        if (reader !== db) reader.close();
      }
    },
  };
}

/** The steps of one export: each runs one statement over the next window of ids and yields what it found. */
function* windowsWithin({ window, lastId }: ReturnType<typeof exportStatements>, bounds: Bounds): Generator<ExportRow[], void, undefined> {
  // Ids are never reused (AUTOINCREMENT), and a write commits ids above every committed one: fixing the end now
  // makes the reading finish even while imports go on.
  const through = lastId.get() as number;
  const params = {
    after: 0,
    through: 0,
    countryKeys: bounds.countryKeys ? JSON.stringify(bounds.countryKeys) : null,
    excludedCountryKeys: bounds.excludedCountryKeys.length ? JSON.stringify(bounds.excludedCountryKeys) : null,
    statuses: bounds.statuses === ANY_STATUS ? null : JSON.stringify(statusesOf(bounds.statuses)),
    transactionsLo: finite(bounds.transactions[0]),
    transactionsHi: finite(bounds.transactions[1]),
    centsLo: finite(bounds.cents[0]),
    centsHi: finite(bounds.cents[1]),
    activityLo: finite(bounds.lastActivityAt[0]),
    activityHi: finite(bounds.lastActivityAt[1]),
  };
  let size = FIRST_WINDOW;
  while (params.after < through) {
    params.through = Math.min(through, params.after + size);
    const started = performance.now();
    const rows = window.all(params) as ExportRow[];
    const ms = performance.now() - started;
    // A full step may have stopped short of the window's end: the next one goes on after its last row.
    params.after = rows.length === ROWS_PER_STEP ? rows[rows.length - 1]![0] : params.through;
    if (ms > SLOW_MS) size = Math.max(SMALLEST_WINDOW, size / 2);
    else if (ms < FAST_MS && rows.length < FEW_ROWS) size = Math.min(LARGEST_WINDOW, size * 2);
    yield rows;
  }
}
