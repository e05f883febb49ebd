// SQL for customers: list, get, insert (single and batch), update, delete. Every write keeps the search index
// and the aggregate tables in the same transaction. Knows no HTTP.
import { AppError } from '../domain/errors.ts';
import { countryKey, type Customer, type CustomerRecord, type CustomerStatus } from '../domain/customers.ts';
import { createCustomerStats, StatsDelta } from './customer-stats.ts';
import { isUniqueViolation, type Db } from './database.ts';
import { generationBumper, generationReader } from './customer-generation.ts';

export const CUSTOMER_SORTS = ['name', 'totalAmountSpent', 'totalTransactions', 'lastActivityDate'] as const;
export type CustomerSort = (typeof CUSTOMER_SORTS)[number];

export interface CustomerQuery {
  /** Trimmed; empty means no search. */
  search: string;
  status: CustomerStatus | 'all';
  /** Trimmed; empty means every country. */
  country: string;
  sort: CustomerSort;
  direction: 'asc' | 'desc';
  page: number;
  limit: number;
}

interface CustomerRow {
  id: number;
  name: string;
  email: string;
  country: string;
  country_key: string;
  total_transactions: number;
  amount_cents: number;
  last_activity_at: number;
  status: CustomerStatus;
}

/** A stored customer and its numeric id, as change listeners see it. */
export type StoredCustomer = CustomerRecord & { id: number; countryKey: string };

/** Told after each committed write, in order: what was stored, what it replaced, and the write's generation. */
export interface CustomerChangeListener {
  (changes: { before: StoredCustomer | undefined; after: StoredCustomer | undefined }[], generation: number): void;
}

const SORT_INDEXES: Record<CustomerSort, string> = {
  name: 'customers_by_name',
  totalAmountSpent: 'customers_by_amount',
  totalTransactions: 'customers_by_transactions',
  lastActivityDate: 'customers_by_activity',
};

const SORT_COLUMNS: Record<CustomerSort, string> = {
  name: 'name COLLATE NOCASE',
  totalAmountSpent: 'amount_cents',
  totalTransactions: 'total_transactions',
  lastActivityDate: 'last_activity_at',
};

/** Trigram search needs three characters; shorter terms fall back to LIKE. */
const TRIGRAM = 3;

/**
 * How a page is read. `ordered`: walk the sort index and test each row (LIKE), stopping after one page: fast
 * when matches are common. `trigram`: collect the trigram matches, then sort them: fast when they are rare.
 * `scan`: read the whole table and sort the LIKE matches: for rare terms under three characters. `foldscan`: the
 * same for non-ASCII terms under three characters, which LIKE would compare case-sensitively.
 */
type PagePlan = 'ordered' | 'trigram' | 'scan' | 'foldscan';
type Matcher = 'none' | 'trigram' | 'like' | 'fold';

/** Matches at least this share of the filtered base count as common (0.5%). */
const COMMON_SHARE = 1 / 200;

/** How many searches are remembered for the current data generation. */
const SEARCH_CACHE_SIZE = 500;

/** Rare searches up to this many matches remember their ordered ids, so each page is a few lookups. */
const REMEMBERED_IDS = 10_000;

function toCustomer(row: CustomerRow): Customer {
  return {
    id: String(row.id),
    name: row.name,
    email: row.email,
    country: row.country,
    totalTransactions: row.total_transactions,
    totalAmountSpent: row.amount_cents / 100,
    lastActivityDate: new Date(row.last_activity_at).toISOString(),
    status: row.status,
  };
}

function toStored(row: CustomerRow): StoredCustomer {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    country: row.country,
    countryKey: row.country_key,
    totalTransactions: row.total_transactions,
    amountCents: row.amount_cents,
    lastActivityAt: row.last_activity_at,
    status: row.status,
  };
}

/** Returns the numeric id of an opaque customer id, or undefined when it cannot name a customer. */
function parseId(id: string): number | undefined {
  return /^[1-9]\d{0,15}$/.test(id) && Number.isSafeInteger(Number(id)) ? Number(id) : undefined;
}

function searchText(name: string, email: string): string {
  return `${name}\n${email}`;
}

/** Returns the FTS5 phrase that matches `term` as a substring. */
function phrase(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}

function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export type CustomerRepository = ReturnType<typeof createCustomerRepository>;

/** Returns the customer queries; `onChange` hears about every committed write. */
export function createCustomerRepository(db: Db, onChange: CustomerChangeListener = () => {}) {
  const stats = createCustomerStats(db);
  const byId = db.prepare<[number], CustomerRow>('SELECT * FROM customers WHERE id = ?');
  const insert = db.prepare<{ [key: string]: unknown }, never>(
    `INSERT INTO customers (name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status, created_at, updated_at)
     VALUES (@name, @email, @country, @countryKey, @totalTransactions, @amountCents, @lastActivityAt, @status, @now, @now)
     ON CONFLICT (email) DO NOTHING`,
  );
  const update = db.prepare(
    `UPDATE customers SET name = @name, email = @email, country = @country, country_key = @countryKey,
       total_transactions = @totalTransactions, amount_cents = @amountCents, last_activity_at = @lastActivityAt,
       status = @status, updated_at = @now
     WHERE id = @id`,
  );
  const remove = db.prepare('DELETE FROM customers WHERE id = ?');
  // Every write transaction counts one generation; the audience index and the search memory use it.
  const bump = generationBumper(db);
  const currentGeneration = generationReader(db);

  // Search results cost time in proportion to their matches, and paging repeats the same search on every page.
  // Each search's count, and for rare terms the ids of every match in page order, are remembered until customers
  // change: any write, by any process, moves the generation on and empties the memory.
  let rememberedGeneration = -1;
  const remembered = new Map<string, { total: number; ids?: number[] }>();
  const remember = (key: string, compute: () => { total: number; ids?: number[] }) => {
    const generation = currentGeneration();
    if (generation !== rememberedGeneration) {
      remembered.clear();
      rememberedGeneration = generation;
    }
    let result = remembered.get(key);
    if (result === undefined) {
      result = compute();
      if (remembered.size >= SEARCH_CACHE_SIZE) remembered.delete(remembered.keys().next().value!);
      remembered.set(key, result);
    }
    return result;
  };
  const indexText = db.prepare('INSERT INTO customer_search (rowid, text) VALUES (?, ?)');
  const unindexText = db.prepare('DELETE FROM customer_search WHERE rowid = ?');
  const top = db.prepare<[number], CustomerRow>(
    'SELECT * FROM customers ORDER BY amount_cents DESC, last_activity_at DESC, id DESC LIMIT ?',
  );

  // Emails are stored lower-cased; names are folded by JavaScript's toLowerCase, which knows every script.
  db.function('folded_contains', { deterministic: true }, (text, term) => (String(text).toLowerCase().includes(String(term)) ? 1 : 0));
  const where = (search: Matcher, byStatus: boolean, byCountry: boolean) =>
    [
      search === 'trigram' ? 'id IN (SELECT rowid FROM customer_search WHERE customer_search MATCH @match)' : '',
      search === 'like' ? "(name LIKE @like ESCAPE '\\' OR email LIKE @like ESCAPE '\\')" : '',
      search === 'fold' ? '(instr(email, @folded) > 0 OR folded_contains(name, @folded))' : '',
      byStatus ? 'status = @status' : '',
      byCountry ? 'country_key = @countryKey' : '',
    ]
      .filter(Boolean)
      .join(' AND ') || '1';
  const countSql = (matcher: Matcher, byStatus: boolean, byCountry: boolean) =>
    matcher === 'trigram' && !byStatus && !byCountry
      ? 'SELECT count(*) AS n FROM customer_search WHERE customer_search MATCH @match'
      : `SELECT count(*) AS n FROM customers NOT INDEXED WHERE ${where(matcher, byStatus, byCountry)}`;
  const PLAN_SOURCES = { ordered: ['like', true], trigram: ['trigram', false], scan: ['like', false], foldscan: ['fold', false] } as const;
  const pageSql = (plan: PagePlan | 'none', byStatus: boolean, byCountry: boolean, sort: CustomerSort, direction: 'asc' | 'desc') => {
    const [matcher, walkSortIndex] = plan === 'none' ? (['none', false] as const) : PLAN_SOURCES[plan];
    const from = plan === 'none' ? 'customers' : walkSortIndex ? `customers INDEXED BY ${SORT_INDEXES[sort]}` : 'customers NOT INDEXED';
    return `SELECT * FROM ${from} WHERE ${where(matcher, byStatus, byCountry)} ORDER BY ${SORT_COLUMNS[sort]} ${direction}, id ${direction} LIMIT @limit OFFSET @offset`;
  };
  // Several hundred variants exist and each prepared statement holds memory, so they are prepared on first use.
  // The default page is prepared now: a mistake in the shared SQL still fails at start-up.
  const statements = new Map<string, ReturnType<typeof db.prepare>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  prepared(pageSql('none', false, false, 'lastActivityDate', 'desc'));

  const insertOne = (record: CustomerRecord, now: number, delta: StatsDelta): StoredCustomer | undefined => {
    const key = countryKey(record.country);
    const result = insert.run({ ...record, countryKey: key, now });
    if (result.changes === 0) return undefined;
    const id = Number(result.lastInsertRowid);
    indexText.run(id, searchText(record.name, record.email));
    const stored = { ...record, id, countryKey: key };
    delta.add(stored, 1);
    return stored;
  };

  const insertMany = db.transaction((records: readonly CustomerRecord[], now: number) => {
    const delta = new StatsDelta();
    const stored = records.map((record) => insertOne(record, now, delta));
    stats.apply(delta);
    return { stored, generation: bump() };
  });

  const updateOne = db.transaction((id: number, changes: Partial<CustomerRecord>, now: number) => {
    const row = byId.get(id);
    if (!row) throw new AppError('not_found', `No customer with id ${id}.`);
    const before = toStored(row);
    const merged = { ...before, ...changes };
    const after: StoredCustomer = { ...merged, countryKey: countryKey(merged.country) };
    try {
      update.run({ ...after, now });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('conflict', `A customer with the email ${after.email} already exists.`);
      throw error;
    }
    if (after.name !== before.name || after.email !== before.email) {
      unindexText.run(id);
      indexText.run(id, searchText(after.name, after.email));
    }
    const delta = new StatsDelta();
    delta.add(before, -1);
    delta.add(after, 1);
    stats.apply(delta);
    return { change: { before, after }, generation: bump() };
  });

  const deleteOne = db.transaction((id: number) => {
    const row = byId.get(id);
    if (!row) throw new AppError('not_found', `No customer with id ${id}.`);
    const before = toStored(row);
    remove.run(id);
    unindexText.run(id);
    const delta = new StatsDelta();
    delta.add(before, -1);
    stats.apply(delta);
    return { change: { before, after: undefined }, generation: bump() };
  });

  return {
    stats,

    /** Returns one page of customers matching the query, and how many match in all. */
    listCustomers(query: CustomerQuery): { items: Customer[]; total: number } {
      const term = query.search;
      // Names and emails hold no control characters, so such a term matches nothing.
      if (/[\u0000-\u001f\u007f]/.test(term)) return { items: [], total: 0 };
      const status = query.status === 'all' ? undefined : query.status;
      const key = countryKey(query.country) || undefined;
      const byStatus = status !== undefined;
      const byCountry = key !== undefined;
      const params = {
        match: phrase(term),
        like: likePattern(term),
        folded: term.toLowerCase(),
        status,
        countryKey: key,
        limit: query.limit,
        offset: (query.page - 1) * query.limit,
      };
      const base = stats.countMatching(status, key);
      if (term === '') {
        if (params.offset >= base) return { items: [], total: base };
        const page = prepared(pageSql('none', byStatus, byCountry, query.sort, query.direction));
        return { items: (page.all(params) as CustomerRow[]).map(toCustomer), total: base };
      }
      const trigram = [...term].length >= TRIGRAM;
      // LIKE folds case for ASCII only: non-ASCII terms never use it.
      const ascii = /^[\x20-\x7e]*$/.test(term);
      const matcher: Matcher = trigram ? 'trigram' : ascii ? 'like' : 'fold';
      const counted = remember(`${matcher}|${status}|${key}|${term}`, () => ({
        total: (prepared(countSql(matcher, byStatus, byCountry)).get(params) as { n: number }).n,
      }));
      const total = counted.total;
      if (params.offset >= total) return { items: [], total };
      const common = total >= base * COMMON_SHARE && ascii;
      const plan: PagePlan = common ? 'ordered' : trigram ? 'trigram' : ascii ? 'scan' : 'foldscan';
      const page = prepared(pageSql(plan, byStatus, byCountry, query.sort, query.direction));
      if (common || total > REMEMBERED_IDS) return { items: (page.all(params) as CustomerRow[]).map(toCustomer), total };
      // A rare term: sort all its matches once, then serve every page from their remembered ids.
      const { ids } = remember(`${plan}|${status}|${key}|${term}|${query.sort}|${query.direction}`, () => ({
        total,
        ids: (page.all({ ...params, limit: -1, offset: 0 }) as CustomerRow[]).map((row) => row.id),
      }));
      const items = ids!.slice(params.offset, params.offset + params.limit).map((id) => toCustomer(byId.get(id)!));
      return { items, total };
    },

    /** Returns the highest spenders, ties by most recent activity. */
    topCustomers(limit: number): Customer[] {
      return top.all(limit).map(toCustomer);
    },

    /** Returns the customer with this id, or undefined. */
    findCustomer(id: string): Customer | undefined {
      const numeric = parseId(id);
      const row = numeric === undefined ? undefined : byId.get(numeric);
      return row && toCustomer(row);
    },

    /** Stores the records in one transaction; returns each one's new id, or null when its email was taken. */
    insertCustomers(records: readonly CustomerRecord[], now: Date): (string | null)[] {
      const { stored, generation } = insertMany.immediate(records, now.getTime());
      onChange(stored.filter((s) => s !== undefined).map((after) => ({ before: undefined, after })), generation);
      return stored.map((s) => (s ? String(s.id) : null));
    },

    /** Applies the changes and returns the customer; throws `not_found` or `conflict` (email taken). */
    updateCustomer(id: string, changes: Partial<CustomerRecord>, now: Date): Customer {
      const numeric = parseId(id);
      if (numeric === undefined) throw new AppError('not_found', `No customer with id ${id}.`);
      const { change, generation } = updateOne.immediate(numeric, changes, now.getTime());
      onChange([change], generation);
      return toCustomer(byId.get(numeric)!);
    },

    /** Deletes the customer; throws `not_found` for an unknown id. */
    deleteCustomer(id: string): void {
      const numeric = parseId(id);
      if (numeric === undefined) throw new AppError('not_found', `No customer with id ${id}.`);
      const { change, generation } = deleteOne.immediate(numeric);
      onChange([change], generation);
    },
  };
}
