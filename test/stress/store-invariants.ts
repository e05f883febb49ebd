// What must hold of a database file whatever happened to the process writing it, checked on a separate connection:
// SQLite's own integrity check, complete customer rows, aggregate tables equal to a recomputation from the rows,
// a search index holding exactly the stored customers, and complete segment rows.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { countryKey, DAY_MS } from '../../src/domain/customers.ts';
import type { Condition } from '../../src/domain/segments.ts';

export type Db = Database.Database;

/** Opens the file read-only (the service may still be running on it). */
export function openReadOnly(path: string): Db {
  return new Database(path, { readonly: true, fileMustExist: true });
}

/** Rows as sorted lines, so a difference shows as a readable diff. */
function lines(rows: object[]): string[] {
  return rows.map((row) => JSON.stringify(Object.values(row))).sort();
}

/** The aggregate tables recomputed from the customers: what customer_totals, customer_days and customer_countries must hold. */
export function recomputeAggregates(db: Db) {
  return {
    totals: db.prepare('SELECT status, count(*) AS customers, sum(amount_cents) AS amount_cents FROM customers GROUP BY status').all() as {
      status: string;
      customers: number;
      amount_cents: number;
    }[],
    // Floor division, also for instants before 1970 (SQLite's `/` truncates towards zero).
    days: db
      .prepare(
        `SELECT status, (last_activity_at - ((last_activity_at % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS}) / ${DAY_MS} AS day,
           count(*) AS customers, sum(amount_cents) AS amount_cents
         FROM customers GROUP BY status, day`,
      )
      .all() as object[],
    countries: db.prepare('SELECT country_key, status, count(*) AS customers FROM customers GROUP BY country_key, status').all() as object[],
  };
}

/** The aggregate tables as stored, without rows that count nothing. */
export function storedAggregates(db: Db) {
  return {
    totals: db.prepare('SELECT status, customers, amount_cents FROM customer_totals WHERE customers != 0 OR amount_cents != 0').all() as object[],
    days: db.prepare('SELECT status, day, customers, amount_cents FROM customer_days WHERE customers != 0 OR amount_cents != 0').all() as object[],
    countries: db.prepare('SELECT country_key, status, customers FROM customer_countries WHERE customers != 0').all() as object[],
  };
}

/** Asserts SQLite's integrity and foreign key checks. */
export function assertSqliteIntact(db: Db): void {
  assert.deepEqual(db.pragma('integrity_check', { simple: false }), [{ integrity_check: 'ok' }], 'PRAGMA integrity_check');
  assert.deepEqual(db.pragma('foreign_key_check'), [], 'PRAGMA foreign_key_check');
}

/** Asserts that every customer row has every field, of the right type and within its rules. */
export function assertCustomerRowsComplete(db: Db): void {
  const broken = db
    .prepare(
      `SELECT id FROM customers WHERE
         typeof(name) != 'text' OR length(trim(name)) = 0 OR name != trim(name)
         OR typeof(email) != 'text' OR instr(email, '@') < 2 OR email != trim(email)
         OR typeof(country) != 'text' OR length(country) < 2 OR typeof(country_key) != 'text'
         OR typeof(total_transactions) != 'integer' OR total_transactions < 0
         OR typeof(amount_cents) != 'integer' OR amount_cents < 0
         OR typeof(last_activity_at) != 'integer'
         OR status IS NULL OR status NOT IN ('active', 'inactive', 'churned')
         OR typeof(created_at) != 'integer' OR typeof(updated_at) != 'integer' OR updated_at < created_at
       LIMIT 10`,
    )
    .pluck()
    .all();
  assert.deepEqual(broken, [], 'customer rows with a missing or broken field');
  const keys = db.prepare('SELECT id, country, country_key FROM customers').raw().iterate() as Iterable<[number, string, string]>;
  for (const [id, country, key] of keys) assert.equal(key, countryKey(country), `country_key of customer ${id}`);
}

/** Asserts that the three aggregate tables equal a recomputation from the customer rows. */
export function assertAggregatesMatchRows(db: Db): void {
  const expected = recomputeAggregates(db);
  const stored = storedAggregates(db);
  assert.deepEqual(lines(stored.totals), lines(expected.totals), 'customer_totals against the rows');
  assert.deepEqual(lines(stored.days), lines(expected.days), 'customer_days against the rows');
  assert.deepEqual(lines(stored.countries), lines(expected.countries), 'customer_countries against the rows');
}

/** Asserts that the trigram index holds exactly the stored customers, passes FTS5's own check, and finds sample emails. */
export function assertSearchIndexMatchesRows(db: Db, samples = 5): void {
  const count = (sql: string) => db.prepare(sql).pluck().get() as number;
  assert.equal(count('SELECT count(*) FROM customer_search'), count('SELECT count(*) FROM customers'), 'search index entries against customers');
  assert.equal(count('SELECT count(*) FROM customer_search WHERE rowid NOT IN (SELECT id FROM customers)'), 0, 'search entries without a customer');
  // FTS5 checks its own structure; for a contentless table it cannot compare with the text, hence the samples.
  const writable = new Database(db.name, { fileMustExist: true });
  try {
    writable.prepare(`INSERT INTO customer_search (customer_search) VALUES ('integrity-check')`).run();
  } finally {
    writable.close();
  }
  const find = db.prepare<[string], number>('SELECT rowid FROM customer_search WHERE customer_search MATCH ?').pluck();
  const picks = db.prepare('SELECT id, email FROM customers ORDER BY random() LIMIT ?').all(samples) as { id: number; email: string }[];
  for (const { id, email } of picks) assert.ok(find.all(`"${email.replace(/"/g, '""')}"`).includes(id), `the search index finds ${email}`);
}

/** Asserts every customer-side invariant at once; returns the number of customers. */
export function assertCustomersConsistent(path: string): number {
  const db = openReadOnly(path);
  try {
    assertSqliteIntact(db);
    assertCustomerRowsComplete(db);
    assertAggregatesMatchRows(db);
    assertSearchIndexMatchesRows(db);
    return db.prepare('SELECT count(*) FROM customers').pluck().get() as number;
  } finally {
    db.close();
  }
}

/** Returns how many customers meet the conditions at `now`, by SQL: the reference for the in-memory audience index. */
export function countByConditions(db: Db, conditions: readonly Condition[], now: number): number {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const ops = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
  for (const c of conditions) {
    if (c.field === 'country' || c.field === 'status') {
      const column = c.field === 'country' ? 'country_key' : 'status';
      const values = (c.operator === 'in' ? c.value : [c.value]).map((value) => (c.field === 'country' ? countryKey(value) : value));
      where.push(`${column} ${c.operator === 'neq' ? 'NOT IN' : 'IN'} (${values.map(() => '?').join(', ')})`);
      params.push(...values);
    } else if (c.field === 'totalTransactions') {
      where.push(`total_transactions ${ops[c.operator]} ?`);
      params.push(c.value);
    } else if (c.field === 'totalAmountSpent') {
      where.push(`amount_cents ${ops[c.operator]} ?`);
      params.push(Math.round(c.value * 100)); // the tests use whole cents, where this is exact
    } else {
      // More days ago is an earlier instant: the comparison flips onto the timestamp.
      const flipped = ({ gt: '<', gte: '<=', lt: '>', lte: '>=' } as const)[c.operator];
      where.push(`last_activity_at ${flipped} ?`);
      params.push(now - c.value * DAY_MS);
    }
  }
  return db.prepare(`SELECT count(*) FROM customers WHERE ${where.join(' AND ') || '1'}`).pluck().get(...params) as number;
}
