// The customers within a segment's bounds on PostgreSQL, read for a download (the contract of ../store/export.ts, as
// on SQLite): one statement per step over the next ids, at most ROWS_PER_STEP rows each, each step asked for only when
// the download has taken the previous one. A customer comes at most once, as it is when its step reads it (one
// deleted before is left out, one added after the start does not come), and no transaction stays open while a slow
// client reads, which would hold back vacuum. Knows no HTTP.
import type { PostgresEngine } from '../../db/pg-engine.ts';
import { ANY_STATUS, statusesOf, type Bounds } from '../../domain/segments.ts';
import type { CustomerExport, ExportRow } from '../store/export.ts';
import { EXPORT_COLUMNS } from '../store/fields.ts';

/** Rows a batch holds: about as many as a step of SQLite's export. */
const ROWS_PER_STEP = 2048;

/** Returns the conditions (each `AND ...`) of the customers within `bounds`, and their binds; an open bound adds none. */
function matchingQuery(bounds: Bounds): { where: string; binds: unknown[] } {
  const conditions: string[] = [];
  const binds: unknown[] = [];
  const bind = (value: unknown) => `$${binds.push(value)}`;
  if (bounds.countryKeys) conditions.push(`country_key = ANY(${bind(bounds.countryKeys)}::text[])`);
  if (bounds.excludedCountryKeys.length > 0) conditions.push(`country_key <> ALL(${bind(bounds.excludedCountryKeys)}::text[])`);
  if (bounds.statuses !== ANY_STATUS) conditions.push(`status = ANY(${bind(statusesOf(bounds.statuses))}::text[])`);
  const ranges: [string, [number, number]][] = [
    ['total_transactions', bounds.transactions],
    ['amount_cents', bounds.cents],
    ['last_activity_at', bounds.lastActivityAt],
  ];
  for (const [column, [lo, hi]] of ranges) {
    if (lo > -Infinity) conditions.push(`${column} >= ${bind(lo)}::bigint`);
    if (hi < Infinity) conditions.push(`${column} <= ${bind(hi)}::bigint`);
  }
  return { where: conditions.map((c) => `AND ${c}`).join(' '), binds };
}

/** Returns the reader of customers within bounds on `engine`. */
export function createPgCustomerExport(engine: PostgresEngine): CustomerExport {
  return {
    async *matchingCustomers(bounds) {
      if (!bounds) return;
      const { where, binds } = matchingQuery(bounds);
      // Ids only grow, and customer writes take their ids in commit order (the generation lock of schema.sql's
      // customers_write_turn comes first): fixing the end now makes the reading finish even while imports go on.
      const [row] = await engine.transaction('read only', (tx) => tx<{ through: number }[]>`SELECT coalesce(max(id), 0)::bigint AS through FROM customers`);
      const through = row!.through;
      const after = `$${binds.length + 1}`;
      const text = `SELECT ${EXPORT_COLUMNS} FROM customers WHERE id > ${after} AND id <= $${binds.length + 2} ${where} ORDER BY id LIMIT ${ROWS_PER_STEP}`;
      for (let last = 0; last < through; ) {
        const rows = (await engine.transaction('read only', (tx) => tx.unsafe(text, [...binds, last, through] as never[]).values())) as unknown as ExportRow[];
        if (rows.length > 0) yield rows;
        if (rows.length < ROWS_PER_STEP) return;
        last = rows[rows.length - 1]![0];
      }
    },
  };
}
