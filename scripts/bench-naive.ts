// The statements `npm run bench` times next to the service's in-process reads, on each engine side by side: the naive
// single query over customers that each aggregate replaces (a full scan, no aggregate table or index), the statement
// the service runs for an unfiltered search count, and a full-scan count for each segment preview. The two engines
// ask the same questions; only their SQL dialects differ.
import type { SqliteEngine } from '../src/db/engine.ts';
import type { PostgresEngine } from '../src/db/pg-engine.ts';

/** The statements of one engine; each resolves (or returns, on SQLite) what the database answered. */
export interface EngineQueries {
  kpis(): unknown;
  /** Per month since `fromMs`: customers, cents and churned. */
  trend(fromMs: number): unknown;
  /** Status counts and the active customers idle since before `staleBeforeMs`. */
  health(staleBeforeMs: number): unknown;
  /** The five highest spenders (a full scan and sort) and the total spent. */
  top(): unknown;
  /** A substring count of name or email, as a full scan. */
  like(term: string): unknown;
  /** The statement the service runs for an unfiltered search count, before its per-generation memory. */
  searchCount(term: string): unknown;
  /** count(*) of the customers WHERE `where` (bench SQL over customers' columns), by a full scan. */
  fullScanCount(where: string): number | Promise<number>;
  /** The country key with the fewest customers. */
  smallestCountry(): Promise<string>;
}

/** Returns the LIKE pattern (escape character `\`) that matches `term` as a substring. */
const substring = (term: string) => `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The statements on SQLite: prepared once, run synchronously (timed without a turn of the event loop). */
export function sqliteQueries({ db }: SqliteEngine): EngineQueries {
  const kpis = db.prepare('SELECT status, count(*) AS n, sum(amount_cents) AS cents FROM customers GROUP BY status');
  const trend = db.prepare(
    `SELECT strftime('%Y-%m', last_activity_at / 1000, 'unixepoch') AS month, count(*) AS n, sum(amount_cents) AS cents,
            sum(status = 'churned') AS churned FROM customers WHERE last_activity_at >= ? GROUP BY month`,
  );
  const health = db.prepare(
    `SELECT count(*) AS n, sum(status = 'active') AS active, sum(status = 'inactive') AS inactive, sum(status = 'churned') AS churned,
            sum(status = 'active' AND last_activity_at < ?) AS stale FROM customers`,
  );
  const top = db.prepare('SELECT (SELECT sum(amount_cents) FROM customers) AS total, id FROM customers NOT INDEXED ORDER BY amount_cents DESC, last_activity_at DESC LIMIT 5');
  const like = db.prepare("SELECT count(*) AS n FROM customers WHERE name LIKE ? ESCAPE '\\' OR email LIKE ? ESCAPE '\\'");
  const trigramCount = db.prepare('SELECT count(*) AS n FROM customer_search WHERE customer_search MATCH ?');
  return {
    kpis: () => kpis.all(),
    trend: (fromMs) => trend.all(fromMs),
    health: (staleBeforeMs) => health.get(staleBeforeMs),
    top: () => top.all(),
    like: (term) => like.get(substring(term), substring(term)),
    searchCount: (term) => trigramCount.get(`"${term}"`),
    fullScanCount: (where) => db.prepare(`SELECT count(*) FROM customers NOT INDEXED WHERE ${where}`).pluck().get() as number,
    smallestCountry: async () => db.prepare('SELECT country_key FROM customer_countries GROUP BY country_key ORDER BY sum(customers) LIMIT 1').pluck().get() as string,
  };
}

/**
 * The statements on PostgreSQL. The naive ones run with index scans turned off for their transaction, as SQLite's
 * say NOT INDEXED: the yardstick is one query over the rows (PostgreSQL may still scan them in parallel).
 */
export function postgresQueries({ sql }: PostgresEngine): EngineQueries {
  const scanning = <T>(run: (tx: typeof sql) => Promise<T>) =>
    sql.begin(async (tx) => {
      await tx`SELECT set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true), set_config('enable_indexonlyscan', 'off', true)`;
      return run(tx as unknown as typeof sql);
    });
  return {
    kpis: () => scanning((tx) => tx`SELECT status, count(*) AS n, sum(amount_cents) AS cents FROM customers GROUP BY status`),
    trend: (fromMs) =>
      scanning(
        (tx) => tx`
          SELECT to_char(to_timestamp(last_activity_at / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM') AS month, count(*) AS n, sum(amount_cents) AS cents,
                 count(*) FILTER (WHERE status = 'churned') AS churned
          FROM customers WHERE last_activity_at >= ${fromMs} GROUP BY month`,
      ),
    health: (staleBeforeMs) =>
      scanning(
        (tx) => tx`
          SELECT count(*) AS n, count(*) FILTER (WHERE status = 'active') AS active, count(*) FILTER (WHERE status = 'inactive') AS inactive,
                 count(*) FILTER (WHERE status = 'churned') AS churned,
                 count(*) FILTER (WHERE status = 'active' AND last_activity_at < ${staleBeforeMs}) AS stale
          FROM customers`,
      ),
    top: () =>
      scanning((tx) => tx`SELECT (SELECT sum(amount_cents) FROM customers) AS total, id FROM customers ORDER BY amount_cents DESC, last_activity_at DESC LIMIT 5`),
    like: (term) => scanning((tx) => tx`SELECT count(*) AS n FROM customers WHERE name ILIKE ${substring(term)} OR email ILIKE ${substring(term)}`),
    // The trigram index's expression (schema.sql, customers_search), as the service's search count asks it.
    searchCount: (term) => sql`SELECT count(*) AS n FROM customers WHERE (name || E'\n' || email) ILIKE ${substring(term)}`,
    fullScanCount: async (where) => {
      const [row] = await scanning((tx) => tx.unsafe<{ n: number }[]>(`SELECT count(*) AS n FROM customers WHERE ${where}`));
      return row!.n;
    },
    smallestCountry: async () => {
      const [row] = await sql<{ country_key: string }[]>`SELECT country_key FROM customer_countries GROUP BY country_key ORDER BY sum(customers), country_key LIMIT 1`;
      return row!.country_key;
    },
  };
}
