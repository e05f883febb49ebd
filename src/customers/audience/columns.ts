// The five matchable customer fields held in memory as columns (typed arrays, in id order), each country with the
// list of its rows, and the count of the rows within a set of bounds. Kept by audience-index.ts.
import { CUSTOMER_STATUSES } from '../../domain/customers.ts';
import { STATUS_BIT, type Bounds } from '../../domain/segments.ts';
import { statusIndex, type CustomerFacts } from '../store/rows.ts';

/** Rows sampled to order the range checks, most selective first. */
const SAMPLE = 512;

/**
 * Countries get codes 0, 1, ...; a row holds `code << 2 | status` (its place in CUSTOMER_STATUSES), which fits 2
 * bytes a row up to this code.
 */
const NARROW_COUNTRIES = 0x1fff;

/** The smallest block. */
const MIN_BLOCK = 1024;

type Numbers = Uint32Array | Float64Array;
type Codes = Int16Array | Int32Array;
/** A country's rows, by position in the block. */
type RowList = { rows: Int32Array; size: number };

/** Whether `n` is a whole number from 0 to 2^32 - 1, so a Uint32Array holds it exactly. */
const fitsUint32 = (n: number) => n >>> 0 === n;

/** A range check on one column: `column[i]` must lie within [lo, hi]. */
interface Range {
  column: Numbers;
  lo: number;
  hi: number;
}

/** What a block counted: its rows within the bounds, and the earliest activity (ms) included and after the bounds. */
interface BlockCount {
  count: number;
  firstIncluded: number;
  firstLater: number;
}

/**
 * Columns of customers in id order, in blocks. A block has a fixed room; once the last is full, a new one as large as
 * all the others together follows. Rows are never copied to larger arrays: a copy would leave the old arrays to the
 * garbage collector, which on a quiet heap keeps them (tens of MB) long after the base has doubled.
 */
export class AudienceColumns {
  private blocks: ColumnBlock[] = [];
  private size = 0;
  /** Country codes, shared by the blocks. */
  private readonly codes = new Map<string, number>();

  /** Empties the columns, with room for `capacity` rows in one block. */
  clear(capacity: number): void {
    this.blocks = [new ColumnBlock(Math.max(MIN_BLOCK, capacity))];
    this.size = 0;
    this.codes.clear();
  }

  /** Adds a row with an id above every stored one; `status` is its place in CUSTOMER_STATUSES. */
  append(id: number, key: string, status: number, transactions: number, cents: number, lastActivityAt: number): void {
    let last = this.blocks.at(-1);
    if (!last || last.full()) {
      last = new ColumnBlock(Math.max(MIN_BLOCK, this.size));
      this.blocks.push(last);
    }
    last.append(id, (this.code(key) << 2) | status, transactions, cents, lastActivityAt);
    this.size++;
  }

  /** Overwrites a known id or appends a new highest one; returns false for an unexpected id (then refill). */
  upsert(c: CustomerFacts): boolean {
    const block = this.blockOf(c.id);
    const status = statusIndex(c.status);
    if (block?.update(c.id, (this.code(c.countryKey) << 2) | status, c.totalTransactions, c.amountCents, c.lastActivityAt)) return true;
    const last = this.blocks.at(-1)?.lastId() ?? -Infinity;
    if (c.id <= last) return false;
    this.append(c.id, c.countryKey, status, c.totalTransactions, c.amountCents, c.lastActivityAt);
    return true;
  }

  /** Marks the row of `id`, if any, as deleted. */
  remove(id: number): void {
    this.blockOf(id)?.remove(id);
  }

  /** Counts the live rows within the bounds, and for how long after now the count stays exact as the clock moves. */
  count(bounds: Bounds): { count: number; validFor: number } {
    // Allowed countries nobody has are no rows to read; none left, no match.
    const wanted = bounds.countryKeys?.flatMap((key) => this.codes.get(key) ?? []);
    if (wanted?.length === 0) return { count: 0, validFor: Infinity };
    const allowed = this.allowedTable(bounds, wanted);
    let count = 0;
    let firstIncluded = Infinity;
    let firstLater = Infinity;
    for (const block of this.blocks) {
      const counted = block.count(bounds, allowed, wanted);
      count += counted.count;
      firstIncluded = Math.min(firstIncluded, counted.firstIncluded);
      firstLater = Math.min(firstLater, counted.firstLater);
    }
    // As time passes, activity bounds move later: an included row drops out once the lower bound passes it, and a
    // row later than the upper bound comes in once the bound reaches it. The nearest of each decides how long the
    // count holds.
    const [aLo, aHi] = bounds.lastActivityAt;
    const validFor = Math.min(aLo === -Infinity ? Infinity : firstIncluded - aLo + 1, aHi === Infinity ? Infinity : firstLater - aHi);
    return { count, validFor };
  }

  /**
   * Whether each packed `code << 2 | status` lies within the bounds' countries and statuses, at index packed + 1 so
   * that a tombstone (-1) reads index 0, never allowed. A few bytes per country: built for each count.
   */
  private allowedTable(bounds: Bounds, wanted: number[] | undefined): Uint8Array {
    const table = new Uint8Array(this.codes.size * 4 + 1);
    const statuses = CUSTOMER_STATUSES.flatMap((status, index) => ((bounds.statuses & STATUS_BIT[status]) !== 0 ? [index] : []));
    const excluded = new Set(bounds.excludedCountryKeys.map((key) => this.codes.get(key)));
    for (const code of wanted ?? this.codes.values()) {
      if (excluded.has(code)) continue;
      for (const status of statuses) table[((code << 2) | status) + 1] = 1;
    }
    return table;
  }

  /** Returns the bytes the columns hold, room not yet used included, and the live rows and room they hold it for. */
  footprint(): { bytes: number; rows: number; room: number } {
    const bytes = this.blocks.reduce((sum, block) => sum + block.bytes(), 0);
    const room = this.blocks.reduce((sum, block) => sum + block.room(), 0);
    return { bytes, rows: this.size, room };
  }

  /** The block whose ids span `id`, if any. */
  private blockOf(id: number): ColumnBlock | undefined {
    let lo = 0;
    let hi = this.blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.blocks[mid]!.lastId() < id) lo = mid + 1;
      else hi = mid;
    }
    return this.blocks[lo];
  }

  private code(key: string): number {
    let code = this.codes.get(key);
    if (code === undefined) {
      code = this.codes.size;
      this.codes.set(key, code);
    }
    return code;
  }
}

/**
 * Columns of a run of customers in id order, with room for a fixed number of rows. Deleted rows stay as tombstones
 * (-1 for country and status) until the columns are refilled. Each country has the list of its rows, so a country
 * condition reads only those.
 *
 * A row takes 22 bytes while its numbers are small: ids, transactions and amounts in 4 bytes, activity in 4 as whole
 * seconds, the country code and status in 2, its place in its country's list in 4. The first value that does not
 * fit (an amount over 2^32 cents, an instant with milliseconds or before 1970, an 8,193rd country) widens its
 * columns to 8 (or 4) bytes for good: a million customers take 22 MB, 26 with instants in milliseconds, 34 once
 * every column is widened.
 */
class ColumnBlock {
  private size = 0;
  /** 4 bytes a row while every id fits 32 bits; widened to 8 the day one does not. */
  private ids: Numbers;
  /** `countryCode << 2 | status` per row; -1 for a deleted one. */
  private countryStatus: Codes;
  /**
   * While `narrowNumbers`, transactions and amounts are Uint32Arrays; once one does not fit, both are Float64Arrays,
   * so the two ranges of the count's loop see one array type either way. Activity widens on its own (whole seconds
   * in a Uint32Array while `narrowActivity`, then ms in a Float64Array): instants with milliseconds are common (a
   * date-time from the API), amounts over 2^32 cents are not, and this way they cost 4 bytes a row, not 12.
   */
  private narrowNumbers = true;
  private narrowActivity = true;
  private transactions: Numbers;
  private cents: Numbers;
  private activity: Numbers;
  /** Row positions per country code, in id order; rebuilt when a stored customer changes country. */
  private byCountry: RowList[] = [];
  private byCountryStale = false;

  constructor(private readonly capacity: number) {
    this.ids = new Uint32Array(capacity);
    this.countryStatus = new Int16Array(capacity);
    this.transactions = new Uint32Array(capacity);
    this.cents = new Uint32Array(capacity);
    this.activity = new Uint32Array(capacity);
  }

  /** The bytes of this block's arrays, its country lists included. */
  bytes(): number {
    const lists = this.byCountry.reduce((sum, list) => sum + (list ? list.rows.byteLength : 0), 0);
    return this.ids.byteLength + this.countryStatus.byteLength + this.transactions.byteLength + this.cents.byteLength + this.activity.byteLength + lists;
  }

  /** The rows this block has room for. */
  room(): number {
    return this.capacity;
  }

  full(): boolean {
    return this.size === this.capacity;
  }

  /** The highest id held; -Infinity when empty. */
  lastId(): number {
    return this.size === 0 ? -Infinity : this.ids[this.size - 1]!;
  }

  /** Adds a row with an id above every stored one; the block must not be full. */
  append(id: number, packed: number, transactions: number, cents: number, lastActivityAt: number): void {
    if (!fitsUint32(id) && this.ids instanceof Uint32Array) this.ids = widened(this.ids, Float64Array, this.size);
    this.ids[this.size] = id;
    this.write(this.size, packed, transactions, cents, lastActivityAt);
    this.addToCountry(packed >> 2, this.size);
    this.size++;
  }

  /** Overwrites the row of `id`; false when the block does not hold it. */
  update(id: number, packed: number, transactions: number, cents: number, lastActivityAt: number): boolean {
    const at = this.find(id);
    if (at < 0) return false;
    const before = this.countryStatus[at]!;
    this.write(at, packed, transactions, cents, lastActivityAt);
    // A new status keeps the row in its country's list; a new country moves it.
    if (packed >> 2 !== before >> 2) this.byCountryStale = true;
    return true;
  }

  remove(id: number): void {
    const at = this.find(id);
    if (at >= 0) this.countryStatus[at] = -1;
  }

  /**
   * Counts the live rows within the bounds whose packed country and status `allowed` lets through (at packed + 1),
   * reading only the rows of the country codes `wanted` when given.
   */
  count(bounds: Bounds, allowed: Uint8Array, wanted: readonly number[] | undefined): BlockCount {
    if (this.byCountryStale) this.rebuildByCountry();
    const lists = wanted?.flatMap((code) => this.byCountry[code] ?? []);
    const ranges = this.orderBySelectivity(
      [
        { column: this.transactions, lo: bounds.transactions[0], hi: bounds.transactions[1] },
        { column: this.cents, lo: bounds.cents[0], hi: bounds.cents[1] },
      ].filter((r) => r.lo !== -Infinity || r.hi !== Infinity),
      lists,
    );
    // Activity is held in whole seconds while narrow: the bounds become the seconds they include.
    const scale = this.narrowActivity ? 1000 : 1;
    const [aLo, aHi] = this.narrowActivity ? secondsWithin(bounds.lastActivityAt) : bounds.lastActivityAt;
    const r1 = ranges[0] ?? { column: this.cents, lo: -Infinity, hi: Infinity };
    const r2 = ranges[1] ?? r1;
    const { column: c1, lo: lo1, hi: hi1 } = r1;
    const { column: c2, lo: lo2, hi: hi2 } = r2;
    const { countryStatus, activity } = this;
    let count = 0;
    let firstIncluded = Infinity;
    let firstLater = Infinity;
    // Two copies of one loop: over the wanted countries' rows (disjoint lists), or over all rows. A shared loop that
    // picks its row per step runs about half as fast. Country and status (and a tombstone) are checked after the
    // ranges: their check reads the row's packed value and then the table, a second dependent read that a country's
    // list, in scattered rows, pays for dearly; the ranges leave it only the rows they let through.
    if (lists) {
      for (const { rows, size } of lists) {
        for (let k = 0; k < size; k++) {
          const i = rows[k]!;
          const v1 = c1[i]!;
          if (v1 < lo1 || v1 > hi1) continue;
          const v2 = c2[i]!;
          if (v2 < lo2 || v2 > hi2) continue;
          if (allowed[countryStatus[i]! + 1] === 0) continue;
          const a = activity[i]!;
          if (a < aLo) continue;
          if (a > aHi) {
            if (a < firstLater) firstLater = a;
            continue;
          }
          if (a < firstIncluded) firstIncluded = a;
          count++;
        }
      }
    } else {
      const { size } = this;
      for (let i = 0; i < size; i++) {
        const v1 = c1[i]!;
        if (v1 < lo1 || v1 > hi1) continue;
        const v2 = c2[i]!;
        if (v2 < lo2 || v2 > hi2) continue;
        if (allowed[countryStatus[i]! + 1] === 0) continue;
        const a = activity[i]!;
        if (a < aLo) continue;
        if (a > aHi) {
          if (a < firstLater) firstLater = a;
          continue;
        }
        if (a < firstIncluded) firstIncluded = a;
        count++;
      }
    }
    return { count, firstIncluded: firstIncluded * scale, firstLater: firstLater * scale };
  }

  /** Returns the ranges ordered so the one that rejects most rows of a sample (of the lists, if any) is checked first. */
  private orderBySelectivity(ranges: Range[], lists: RowList[] | undefined): Range[] {
    if (ranges.length < 2) return ranges;
    const sources = lists ?? [undefined];
    const total = lists ? lists.reduce((n, list) => n + list.size, 0) : this.size;
    const step = Math.max(1, Math.floor(total / SAMPLE));
    const passing = ranges.map(({ column, lo, hi }) => {
      let n = 0;
      for (const list of sources) {
        const end = list ? list.size : this.size;
        for (let k = 0; k < end; k += step) {
          const v = column[list ? list.rows[k]! : k]!;
          if (v >= lo && v <= hi) n++;
        }
      }
      return n;
    });
    return ranges.map((range, i) => ({ range, passing: passing[i]! })).sort((a, b) => a.passing - b.passing).map((r) => r.range);
  }

  private rebuildByCountry(): void {
    this.byCountry = [];
    for (let i = 0; i < this.size; i++) if (this.countryStatus[i]! >= 0) this.addToCountry(this.countryStatus[i]! >> 2, i);
    this.byCountryStale = false;
  }

  private addToCountry(code: number, at: number): void {
    let list = this.byCountry[code];
    if (!list) {
      list = { rows: new Int32Array(Math.min(1024, this.capacity)), size: 0 };
      this.byCountry[code] = list;
    }
    if (list.size === list.rows.length) {
      const grown = new Int32Array(Math.min(list.rows.length * 2, this.capacity));
      grown.set(list.rows);
      list.rows = grown;
    }
    list.rows[list.size++] = at;
  }

  /** Moves transactions and amounts to 8 bytes a row, for good. */
  private widenNumbers(): void {
    this.narrowNumbers = false;
    this.transactions = widened(this.transactions, Float64Array, this.size);
    this.cents = widened(this.cents, Float64Array, this.size);
  }

  /** Moves activity to 8 bytes a row (seconds to ms), for good. */
  private widenActivity(): void {
    this.narrowActivity = false;
    const activity = widened(this.activity, Float64Array, this.size);
    for (let i = 0; i < this.size; i++) activity[i]! *= 1000;
    this.activity = activity;
  }

  private write(at: number, packed: number, transactions: number, cents: number, lastActivityAt: number): void {
    if (this.narrowNumbers && !(fitsUint32(transactions) && fitsUint32(cents))) this.widenNumbers();
    if (this.narrowActivity && !fitsUint32(lastActivityAt / 1000)) this.widenActivity();
    if (packed >> 2 > NARROW_COUNTRIES && this.countryStatus instanceof Int16Array) this.countryStatus = widened(this.countryStatus, Int32Array, this.size);
    this.countryStatus[at] = packed;
    this.transactions[at] = transactions;
    this.cents[at] = cents;
    this.activity[at] = this.narrowActivity ? lastActivityAt / 1000 : lastActivityAt;
  }

  /** Binary search for an id; -1 when absent. */
  private find(id: number): number {
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const value = this.ids[mid]!;
      if (value === id) return mid;
      if (value < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}

/** The whole seconds `s` with `lo <= s * 1000 <= hi`, as [first, last] (exact: `s * 1000` is, for any such s). */
function secondsWithin([lo, hi]: [number, number]): [number, number] {
  let first = Math.ceil(lo / 1000);
  if (Number.isFinite(first)) {
    while ((first - 1) * 1000 >= lo) first--;
    while (first * 1000 < lo) first++;
  }
  let last = Math.floor(hi / 1000);
  if (Number.isFinite(last)) {
    while ((last + 1) * 1000 <= hi) last++;
    while (last * 1000 > hi) last--;
  }
  return [first, last];
}

/** A copy of `array`'s first `rows` in a wider type, with the same room. */
function widened<T extends Float64Array | Int32Array>(array: Numbers | Codes, Type: new (length: number) => T, rows: number): T {
  const next = new Type(array.length);
  next.set(array.subarray(0, rows));
  return next;
}
