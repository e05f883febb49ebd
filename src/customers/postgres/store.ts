// The customers on PostgreSQL: the same contract as ../store/repository.ts. The triggers on customers (schema.sql)
// keep the aggregate tables and the change log in each write's transaction, so a write here is the customers
// statement alone: one engine.write transaction, then `feed.catchUp()` before it resolves, so what a caller saw
// acknowledged is already published to this instance's subscribers (read-your-writes). Stats read the aggregate
// tables; listCustomers filters and sorts through the sort indexes and searches through the pg_trgm index. Reads run
// on the pool, outside any transaction. Knows no HTTP.
import { countryKey, CUSTOMER_STATUSES, DAY_MS, dayOf, STALE_AFTER_DAYS, type CustomerRecord, type CustomerSort, type CustomerStatus } from '../../domain/customers.ts';
import { AppError } from '../../domain/errors.ts';
import type { PgSql, PostgresEngine } from '../../db/pg-engine.ts';
import type { ImportedRow } from '../imports/imports.ts';
import { CUSTOMER_FIELDS, sameFields } from '../store/fields.ts';
import { COUNTRY_NAMES_SQL, type CustomerQuery, type CustomerRepository, type CustomerStatsReads, type DayBucket } from '../store/repository.ts';
import { parseId, toCustomer, toStored, type CustomerRow, type StoredCustomer } from '../store/rows.ts';
import { COMMON_SHARE, CONTROL_CHARACTER, likePattern, PRINTABLE_ASCII, REMEMBERED_IDS, SEARCH_CACHE_SIZE } from '../store/search.ts';

/** What the repository needs of the change feed (postgres/change-feed.ts). */
export interface CatchingUpFeed {
  /** Resolves once every write committed before the call is published. */
  catchUp(): Promise<void>;
  /** The last generation published. */
  generation(): number;
}

const PG_TYPES = { TEXT: 'text', INTEGER: 'bigint' } as const;

/** A column a write binds: its name, its PostgreSQL type, and the record's key it is written from. */
interface Written {
  column: string;
  type: 'text' | 'bigint';
  from: keyof CustomerRecord;
  of: (r: CustomerRecord) => unknown;
}

/** The columns a write sets from a record: every declared field, then the country key. */
const WRITTEN: readonly Written[] = [
  ...CUSTOMER_FIELDS.map((f): Written => ({ column: f.column, type: PG_TYPES[f.sqlType], from: f.key, of: (r) => r[f.key] })),
  { column: 'country_key', type: 'text', from: 'country', of: (r) => countryKey(r.country) },
];
const WRITTEN_NAMES = WRITTEN.map((c) => c.column).join(', ');

/** Returns one array per WRITTEN column, holding the records' values in order: the binds of `unnestOf(WRITTEN)`. */
const columnsOf = (records: readonly CustomerRecord[]): unknown[][] => WRITTEN.map((c) => records.map(c.of));

/** Returns `unnest` of one array per column, bound from `$1` on, as the rows `r` with those columns and `ord`. */
const unnestOf = (columns: readonly Pick<Written, 'column' | 'type'>[]) =>
  `unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')}) WITH ORDINALITY AS r (${columns.map((c) => c.column).join(', ')}, ord)`;

/** Inserts records in their order (binds: columnsOf, then the instant); a taken email is skipped. */
const INSERT_SQL = `INSERT INTO customers (${WRITTEN_NAMES}, created_at, updated_at)
  SELECT ${WRITTEN_NAMES}, $${WRITTEN.length + 1}::bigint, $${WRITTEN.length + 1}::bigint FROM ${unnestOf(WRITTEN)} ORDER BY ord
  ON CONFLICT (email) DO NOTHING
  RETURNING id, email`;

/** Replaces the fields of customers by id (binds: the ids, columnsOf, then the instant). */
const REPLACE_SQL = `UPDATE customers AS c SET ${WRITTEN.map((w) => `${w.column} = r.${w.column}`).join(', ')}, updated_at = $${WRITTEN.length + 2}::bigint
  FROM ${unnestOf([{ column: 'id', type: 'bigint' }, ...WRITTEN])}
  WHERE c.id = r.id`;

/** Applies the given fields to one customer (binds: its id, each WRITTEN column's value or null to keep it, the instant). */
const UPDATE_ONE_SQL = `UPDATE customers SET ${WRITTEN.map((w, i) => `${w.column} = coalesce($${i + 2}::${w.type}, ${w.column})`).join(', ')},
  updated_at = $${WRITTEN.length + 2}::bigint
  WHERE id = $1 RETURNING *`;

/**
 * The turn of customer writes (schema.sql's customers_write_turn), taken by a transaction that reads customers it then
 * writes before it reads them, in the order every statement on customers takes them: the table's lock as a write
 * takes it (a seed's ALTER TABLE waits for it), then the generation's row.
 */
async function takeTurn(tx: PgSql): Promise<void> {
  await tx`LOCK TABLE customers IN ROW EXCLUSIVE MODE`;
  await tx`SELECT 1 FROM meta WHERE key = 'customers_generation' FOR NO KEY UPDATE`;
}

const notFound = (id: number | string) => new AppError('not_found', `No customer with id ${id}.`);

/** Returns the customer queries on `engine`; each write resolves once `feed` has published it. */
export function createPgCustomerRepository(engine: PostgresEngine, feed: CatchingUpFeed): CustomerRepository {
  const { sql } = engine;
  const stats = pgStats(sql);
  const search = pgSearch(sql, stats, feed);

  /** Runs `work` in one transaction, then waits until the feed has published what it committed. */
  const written = async <T>(work: (tx: PgSql) => Promise<T>): Promise<T> => {
    const result = await engine.write(work);
    await feed.catchUp();
    return result;
  };
  const idOf = (id: string): number => {
    const numeric = parseId(id);
    if (numeric === undefined) throw notFound(id);
    return numeric;
  };

  return {
    stats,
    listCustomers: (query) => search.listCustomers(query),

    async countryNames() {
      const rows = await sql.unsafe<{ name: string | null }[]>(COUNTRY_NAMES_SQL);
      return rows.map((r) => r.name).filter((name): name is string => name !== null);
    },

    async topCustomers(limit) {
      const rows = await sql<CustomerRow[]>`SELECT * FROM customers ORDER BY amount_cents DESC, last_activity_at DESC, id DESC LIMIT ${limit}`;
      return rows.map(toCustomer);
    },

    async findCustomer(id) {
      const numeric = parseId(id);
      if (numeric === undefined) return undefined;
      const [row] = await sql<CustomerRow[]>`SELECT * FROM customers WHERE id = ${numeric}`;
      return row && toCustomer(row);
    },

    async insertCustomers(records, now) {
      if (records.length === 0) return [];
      const ids = await written((tx) => insertNew(tx, records, now));
      return ids.map((id) => (id === null ? null : String(id)));
    },

    async emailsStored(emails) {
      const rows = await sql<{ email: string }[]>`SELECT email FROM customers WHERE email = ANY(${[...emails]}::text[])`;
      return new Set(rows.map((r) => r.email));
    },

    async importCustomers(records, now, onExisting = 'skip') {
      if (records.length === 0) return [];
      if (onExisting === 'skip') {
        const ids = await written((tx) => insertNew(tx, records, now));
        return ids.map((id): ImportedRow => (id === null ? null : { id: String(id), updated: false }));
      }
      return written((tx) => upsert(tx, records, now));
    },

    async updateCustomer(id, changes, now) {
      const numeric = idOf(id);
      // null keeps a column as it is: no field of a record is ever null.
      const given = WRITTEN.map((w) => (changes[w.from] === undefined ? null : w.of(changes as CustomerRecord)));
      const row = await written(async (tx) => {
        try {
          const [updated] = await tx.unsafe<CustomerRow[]>(UPDATE_ONE_SQL, [numeric, ...given, now.getTime()] as never[]);
          if (!updated) throw notFound(numeric);
          return updated;
        } catch (error) {
          if ((error as { code?: string }).code === '23505') throw new AppError('conflict', `A customer with the email ${changes.email} already exists.`);
          throw error;
        }
      });
      return toCustomer(row);
    },

    async deleteCustomer(id) {
      const numeric = idOf(id);
      const removed = await written((tx) => tx`DELETE FROM customers WHERE id = ${numeric}`);
      if (removed.count === 0) throw notFound(numeric);
    },
  };
}

/**
 * Inserts the records in their order (ids ascending in that order); resolves to each one's id, or null when its email
 * was stored or taken by an earlier record of the same call, as SQLite's row-by-row insert does.
 */
async function insertNew(tx: PgSql, records: readonly CustomerRecord[], now: Date): Promise<(number | null)[]> {
  const rows = await tx.unsafe<{ id: number; email: string }[]>(INSERT_SQL, [...columnsOf(records), now.getTime()] as never[]);
  const ids = new Map(rows.map((r) => [r.email, r.id]));
  // The first record of an email is the one inserted; the later ones met it as taken.
  return records.map((r) => {
    const id = ids.get(r.email);
    if (id === undefined) return null;
    ids.delete(r.email);
    return id;
  });
}

/**
 * Stores the records in their order as SQLite's import with `update` does: a new email is inserted, a stored one (or
 * one an earlier record of this call inserted) has its fields replaced by the record's, written only when they
 * differ. Takes the turn of customer writes first: the stored customers read stay as read until the commit.
 */
async function upsert(tx: PgSql, records: readonly CustomerRecord[], now: Date): Promise<ImportedRow[]> {
  await takeTurn(tx);
  const emails = [...new Set(records.map((r) => r.email))];
  const stored = new Map<string, StoredCustomer>();
  for (const row of await tx<CustomerRow[]>`SELECT * FROM customers WHERE email = ANY(${emails}::text[])`) stored.set(row.email, toStored(row));
  // Per email, what it holds once every record has been applied: a new record (inserted once, with its last fields) or
  // a stored customer, replaced when a record differs from it.
  const added = new Map<string, CustomerRecord>();
  const replaced = new Map<string, StoredCustomer>();
  const outcome = records.map((r) => {
    const before = replaced.get(r.email) ?? stored.get(r.email);
    if (!before) {
      const fresh = !added.has(r.email);
      added.set(r.email, r);
      return { email: r.email, updated: !fresh };
    }
    if (!sameFields(before, r)) replaced.set(r.email, { ...r, id: before.id, email: before.email, countryKey: countryKey(r.country) });
    return { email: r.email, updated: true };
  });
  const changed = [...replaced.values()];
  if (changed.length > 0) await tx.unsafe(REPLACE_SQL, [changed.map((c) => c.id), ...columnsOf(changed), now.getTime()] as never[]);
  const newIds = added.size > 0 ? await insertNew(tx, [...added.values()], now) : [];
  const ids = new Map<string, number>([...stored].map(([email, c]) => [email, c.id]));
  [...added.keys()].forEach((email, i) => {
    // Every customer write waits for the turn this transaction holds: no other can have taken the email meanwhile.
    if (newIds[i] === null) throw new Error(`The email ${email} was stored by a write that did not wait for its turn.`);
    ids.set(email, newIds[i]!);
  });
  return outcome.map(({ email, updated }) => ({ id: String(ids.get(email)), updated }));
}

/** The aggregate reads of ../store/stats.ts, from the aggregate tables (and one day of customers_by_activity). */
function pgStats(sql: PgSql): CustomerStatsReads {
  const totalsByStatus = async () => {
    const out = Object.fromEntries(CUSTOMER_STATUSES.map((s) => [s, { customers: 0, cents: 0 }])) as Record<CustomerStatus, { customers: number; cents: number }>;
    const rows = await sql<{ status: CustomerStatus; customers: number; amount_cents: number }[]>`SELECT status, customers, amount_cents FROM customer_totals`;
    for (const row of rows) out[row.status] = { customers: row.customers, cents: row.amount_cents };
    return out;
  };
  return {
    totalsByStatus,

    async countMatching(status, key) {
      if (key === undefined) {
        const all = await totalsByStatus();
        return status ? all[status].customers : all.active.customers + all.inactive.customers + all.churned.customers;
      }
      const [row] = await sql<{ n: number }[]>`
        SELECT coalesce(sum(customers), 0)::bigint AS n FROM customer_countries
        WHERE country_key = ${key} ${status ? sql`AND status = ${status}` : sql``}`;
      return row!.n;
    },

    async healthInputs(now) {
      const cutoff = now.getTime() - STALE_AFTER_DAYS * DAY_MS;
      const cutoffDay = dayOf(cutoff);
      // Whole days before the cut-off from customer_days; the cut-off's own day from the activity index.
      const [all, [stale]] = await Promise.all([
        totalsByStatus(),
        sql<{ n: number }[]>`
          SELECT (SELECT coalesce(sum(customers), 0) FROM customer_days WHERE status = 'active' AND day < ${cutoffDay})::bigint
               + (SELECT count(*) FROM customers WHERE last_activity_at >= ${cutoffDay * DAY_MS} AND last_activity_at < ${cutoff} AND status = 'active') AS n`,
      ]);
      return { counts: { active: all.active.customers, inactive: all.inactive.customers, churned: all.churned.customers }, staleActives: stale!.n };
    },

    async daysBetween(fromDay, toDay) {
      return [...(await sql<DayBucket[]>`SELECT status, day, customers, amount_cents FROM customer_days WHERE day >= ${fromDay} AND day < ${toDay} ORDER BY day`)];
    },
  };
}

/** What sorts customers.list, tie broken by id: lower(name) is SQLite's NOCASE in the column's "C" collation (customers_by_name). */
const SORT_SQL: Record<CustomerSort, string> = {
  name: 'lower(name)',
  totalAmountSpent: 'amount_cents',
  totalTransactions: 'total_transactions',
  lastActivityDate: 'last_activity_at',
};

/** Returns the ORDER BY of a page: the sort, then the id, both in the direction. */
const orderOf = (sort: CustomerSort, direction: 'asc' | 'desc'): string => {
  const dir = direction === 'asc' ? 'ASC' : 'DESC';
  return `${SORT_SQL[sort]} ${dir}, id ${dir}`;
};

/** The columns a page reads: a CustomerRow's (not the time stamps, which the API does not show), fewer values to parse. */
const PAGE_COLUMNS = ['id', 'country_key', ...CUSTOMER_FIELDS.map((f) => f.column)].join(', ');

/** The customers of the given ids (binds: the ids), in no particular order. */
const BY_IDS_SQL = `SELECT ${PAGE_COLUMNS} FROM customers WHERE id = ANY($1::bigint[])`;

/** The text the trigram index (customers_search) holds, as its expression reads: the search matches within it. */
const SEARCHED = `(name || E'\\n' || email)`;

/**
 * The statements of a search that are planned for their term each time rather than kept prepared (the count, a rare
 * term's ids): a prepared statement's plan may become a generic one, made for no term in particular, which would read
 * the trigram index for every term, also a common one (better read in sort order) or one under three characters (no
 * trigram: the whole index). postgres.js sends such a statement as two round trips (it describes it first), so they
 * run once per generation, not on every page (see pgSearch).
 */
const PLANNED_PER_TERM = { prepare: false };

/**
 * Returns the WHERE conditions of a list query and their binds. A search of printable ASCII is one ILIKE the trigram
 * index serves, in the index's "C" collation, which folds ASCII letters only. Any other search first narrows through
 * the index with each non-ASCII character as `_` (any one character), then matches in the database's collation,
 * which folds every letter as SQLite's trigram tokenizer and JavaScript's toLowerCase do.
 */
function conditionsOf(term: string, status: CustomerStatus | undefined, key: string | undefined): { where: string; binds: unknown[] } {
  const conditions: string[] = [];
  const binds: unknown[] = [];
  const bind = (value: unknown) => `$${binds.push(value)}`;
  if (term !== '') {
    const pattern = likePattern(term);
    if (PRINTABLE_ASCII.test(term)) conditions.push(`${SEARCHED} ILIKE ${bind(pattern)}`);
    else {
      conditions.push(`${SEARCHED} ILIKE ${bind(pattern.replace(/[^\x00-\x7f]/gu, '_'))}`);
      conditions.push(`${SEARCHED} COLLATE "default" ILIKE ${bind(pattern)}`);
    }
  }
  if (status) conditions.push(`status = ${bind(status)}`);
  if (key !== undefined) conditions.push(`country_key = ${bind(key)}`);
  return { where: conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '', binds };
}

/**
 * Returns a memory of values computed from the database, kept while the feed's generation stays the same: any write,
 * by any instance, publishes another generation and empties it. A value is computed after its generation was
 * published (its snapshot holds every write up to it), so it is right while that generation is current. Callers
 * asking for the same key meanwhile share one computation.
 */
function generationMemory(feed: Pick<CatchingUpFeed, 'generation'>) {
  let rememberedGeneration = -1;
  const remembered = new Map<string, Promise<unknown>>();
  return <T>(key: string, compute: () => Promise<T>): Promise<T> => {
    const generation = feed.generation();
    if (generation !== rememberedGeneration) {
      remembered.clear();
      rememberedGeneration = generation;
    }
    const known = remembered.get(key);
    if (known !== undefined) return known as Promise<T>;
    const computing = compute();
    if (remembered.size >= SEARCH_CACHE_SIZE) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, computing);
    // A failure is not remembered: the next caller asks again.
    computing.catch(() => {
      if (remembered.get(key) === computing) remembered.delete(key);
    });
    return computing;
  };
}

/**
 * Returns `listCustomers` on PostgreSQL. Each statement is a round trip, so a page costs one where it can: totals
 * (searches' and filters') are remembered per published generation, as SQLite does; a page without a search is one
 * prepared statement; a rare search (under COMMON_SHARE of its filters' customers, at most REMEMBERED_IDS matches)
 * remembers its matches' ids in page order, and each page is one prepared lookup by id, as on SQLite. A common search
 * walks the sort index, one prepared statement too.
 */
function pgSearch(sql: PgSql, stats: CustomerStatsReads, feed: Pick<CatchingUpFeed, 'generation'>) {
  const remember = generationMemory(feed);
  const rowsOf = <T>(text: string, binds: unknown[], options?: { prepare: boolean }) => sql.unsafe<T[]>(text, binds as never[], options);

  /** Counts the customers of filters without a search, from the aggregate tables. */
  const filteredTotal = (status: CustomerStatus | undefined, key: string | undefined) => remember(`total|${status}|${key}`, () => stats.countMatching(status, key));

  /**
   * A page without a search: one prepared statement. Its limit is written in the text (a page size of the API, a few
   * texts in all): with nothing but the filters bound, PostgreSQL keeps one plan for it rather than planning it on
   * every call, as it does while the limit is a parameter. Past the first page it is a deferred join: the ids of the
   * page from the sort index alone (an index-only scan when the index holds the filters' columns, rather than a visit
   * of every skipped row), then their rows; the ids come as an array, so that the rows are read by their key whatever
   * the plan.
   */
  const plainPage = (where: string, binds: unknown[], order: string, limit: number, offset: number) => {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`A page size must be a positive integer, not ${limit}.`);
    if (offset === 0) return rowsOf<CustomerRow>(`SELECT ${PAGE_COLUMNS} FROM customers ${where} ORDER BY ${order} LIMIT ${limit}`, binds);
    const ids = `SELECT id FROM customers ${where} ORDER BY ${order} LIMIT ${limit} OFFSET $${binds.length + 1}`;
    return rowsOf<CustomerRow>(`SELECT ${PAGE_COLUMNS} FROM customers WHERE id = ANY(ARRAY(${ids})) ORDER BY ${order}`, [...binds, offset]);
  };

  /**
   * A page of a common search (ASCII, at least COMMON_SHARE of its filters' customers): the sort index walked, each
   * row tested, until the page is full. Prepared, with its limit written in the text like plainPage's: the plan
   * PostgreSQL may keep for it, made for no term in particular, assumes a term of 0.5% at most, for which the walk is
   * already the cheapest plan (the rarer terms that the trigram index serves better never come here).
   */
  const commonPage = (where: string, binds: unknown[], order: string, limit: number, offset: number) => {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`A page size must be a positive integer, not ${limit}.`);
    const page = `SELECT ${PAGE_COLUMNS} FROM customers ${where} ORDER BY ${order} LIMIT ${limit}`;
    return offset === 0 ? rowsOf<CustomerRow>(page, binds) : rowsOf<CustomerRow>(`${page} OFFSET $${binds.length + 1}`, [...binds, offset]);
  };

  /** The customers of the ids, in the ids' order; one deleted since the ids were read is left out. */
  const byIds = async (ids: readonly number[]): Promise<CustomerRow[]> => {
    if (ids.length === 0) return [];
    const rows = new Map((await rowsOf<CustomerRow>(BY_IDS_SQL, [ids])).map((r) => [r.id, r]));
    return ids.flatMap((id) => rows.get(id) ?? []);
  };

  return {
    async listCustomers(query: CustomerQuery) {
      const term = query.search;
      if (CONTROL_CHARACTER.test(term)) return { items: [], total: 0 };
      const status = query.status === 'all' ? undefined : query.status;
      const key = countryKey(query.country) || undefined;
      const offset = (query.page - 1) * query.limit;
      const { where, binds } = conditionsOf(term, status, key);
      const order = orderOf(query.sort, query.direction);
      if (term === '') {
        const total = await filteredTotal(status, key);
        if (offset >= total) return { items: [], total };
        return { items: (await plainPage(where, binds, order, query.limit, offset)).map(toCustomer), total };
      }
      const total = await remember(`count|${status}|${key}|${term}`, async () => {
        const [row] = await rowsOf<{ n: number }>(`SELECT count(*) AS n FROM customers ${where}`, binds, PLANNED_PER_TERM);
        return row!.n;
      });
      if (offset >= total) return { items: [], total };
      const common = PRINTABLE_ASCII.test(term) && total >= (await filteredTotal(status, key)) * COMMON_SHARE;
      if (common) return { items: (await commonPage(where, binds, order, query.limit, offset)).map(toCustomer), total };
      if (total > REMEMBERED_IDS) {
        const page = `SELECT ${PAGE_COLUMNS} FROM customers ${where} ORDER BY ${order} LIMIT $${binds.length + 1} OFFSET $${binds.length + 2}`;
        return { items: (await rowsOf<CustomerRow>(page, [...binds, query.limit, offset], PLANNED_PER_TERM)).map(toCustomer), total };
      }
      // A rare term: its matches sorted once (through the trigram index), then every page from their remembered ids.
      const ids = await remember(`ids|${status}|${key}|${term}|${query.sort}|${query.direction}`, async () =>
        (await rowsOf<{ id: number }>(`SELECT id FROM customers ${where} ORDER BY ${order}`, binds, PLANNED_PER_TERM)).map((r) => r.id),
      );
      return { items: (await byIds(ids.slice(offset, offset + query.limit))).map(toCustomer), total };
    },
  };
}
