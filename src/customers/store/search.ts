// SQL for listing customers: search (trigram index or LIKE), status and country filters, sort and pagination, and
// the choice of plan per page. Reads only; knows no HTTP.
import { countryKey, type Customer, type CustomerSort, type CustomerStatus } from '../../domain/customers.ts';
import type { ChangeSource } from '../change-feed.ts';
import { toCustomer, type CustomerRow } from './rows.ts';
import type { CustomerStats } from './stats.ts';
import type { Db } from '../../db/database.ts';


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
export const COMMON_SHARE = 1 / 200;

/** How many searches are remembered for the current data generation. */
export const SEARCH_CACHE_SIZE = 500;

/** Rare searches up to this many matches remember their ordered ids, so each page is a few lookups. */
export const REMEMBERED_IDS = 10_000;

/** Names and emails hold no control characters, so a search with one matches nothing. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** A search of printable ASCII only: the case of its letters is folded the same way by every engine. */
export const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Returns the FTS5 phrase that matches `term` as a substring. */
function phrase(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}

/** Returns the LIKE pattern (escape character `\`) that matches `term` as a substring. */
export function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Returns `listCustomers`, with its statements prepared on first use (the default page at once). */
export function createCustomerSearch(db: Db, stats: CustomerStats, feed: Pick<ChangeSource, 'generation'>) {
  const byId = db.prepare<[number], CustomerRow>('SELECT * FROM customers WHERE id = ?');

  // Search results cost time in proportion to their matches, and paging repeats the same search on every page.
  // Each search's count, and for rare terms the ids of every match in page order, are remembered until customers
  // change: any write, by any process, moves the generation on and empties the memory.
  let rememberedGeneration = -1;
  const remembered = new Map<string, { total: number; ids?: number[] }>();
  const remember = (key: string, compute: () => { total: number; ids?: number[] }) => {
    const generation = feed.generation();
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

  return {
    /** Returns one page of customers matching the query, and how many match in all. */
    listCustomers(query: CustomerQuery): { items: Customer[]; total: number } {
      const term = query.search;
      // Names and emails hold no control characters, so such a term matches nothing.
      if (CONTROL_CHARACTER.test(term)) return { items: [], total: 0 };
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
      const ascii = PRINTABLE_ASCII.test(term);
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
  };
}
