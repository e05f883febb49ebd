// The one matching engine behind segment preview, save, update and get: the four matchable customer fields held
// in memory as columns, so any set of conditions is counted in one pass over typed arrays, whatever its
// selectivity, and counts are remembered until the customers change (or, for activity bounds, the clock moves far
// enough to change them).
import type { Bounds } from '../domain/segments.ts';
import { generationReader, writesElsewhereSettled } from './customer-generation.ts';
import type { CustomerChange, StoredCustomer } from './customer-rows.ts';
import { openReadConnection, type Db } from './database.ts';

export type { CustomerChange } from './customer-rows.ts';

const CHUNK = 50_000;

/** How many counts are remembered for the current generation. */
const REMEMBERED_COUNTS = 1000;

/** Rows sampled to order the range checks, most selective first. */
const SAMPLE = 512;

/** A range check on one column: `column[i]` must lie within [lo, hi]. */
interface Range {
  column: Float64Array;
  lo: number;
  hi: number;
}

/** A remembered count: exact at `now` and for every later instant before `now + validFor`. */
interface Remembered {
  count: number;
  now: number;
  validFor: number;
}

/**
 * Column copy of the customers table, kept current by `apply` (told of each committed write of this process)
 * and reloaded when another process changed customers (`meta.customers_generation` moved on unexpectedly).
 * Rows are kept in id order; deleted rows stay as tombstones (country code -1) until the next reload. Each country
 * also has the list of its rows, so a country condition reads only those.
 */
export class AudienceIndex {
  private size = 0;
  private ids = new Float64Array(0);
  private country = new Int32Array(0);
  private transactions = new Float64Array(0);
  private cents = new Float64Array(0);
  private lastActivityAt = new Float64Array(0);
  private readonly codes = new Map<string, number>();
  /** Row positions per country code, in id order; rebuilt when a stored customer changes country. */
  private byCountry: { rows: Int32Array; size: number }[] = [];
  private byCountryStale = false;
  /** The customers generation the columns reflect; -1 before the first load. */
  private generation = -1;
  private dataVersion = -1;
  private loading: Promise<void> | undefined;
  /** Writes committed while a load runs, applied once it ends. */
  private queued: { changes: CustomerChange[]; generation: number }[] | undefined;
  /** Writes told ahead of an earlier generation still on its way from the import writer, by generation. */
  private early = new Map<number, CustomerChange[]>();
  private remembered = new Map<string, Remembered>();
  private rememberedGeneration = -1;
  private readonly readGeneration: () => number;
  private readonly readDataVersion: () => number;

  constructor(private readonly db: Db) {
    this.readGeneration = generationReader(db);
    const dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.readDataVersion = () => dataVersion.get() as number;
  }

  /** Starts loading in the background, so the first count need not wait for it. */
  warm(): void {
    this.ensureLoading();
  }

  /**
   * Returns how many customers lie within the bounds (0 for `null`), compiled at the instant `now` (epoch ms); waits
   * for a load when one is needed.
   */
  async count(bounds: Bounds | null, now = Date.now()): Promise<number> {
    await this.current();
    if (!bounds) return 0;
    const key = boundsKey(bounds, now);
    if (this.rememberedGeneration !== this.generation) {
      this.remembered.clear();
      this.rememberedGeneration = this.generation;
    }
    const known = this.remembered.get(key);
    if (known && now >= known.now && now - known.now < known.validFor) return known.count;
    const counted = this.countNow(bounds);
    if (this.remembered.size >= REMEMBERED_COUNTS) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(key, { ...counted, now });
    return counted.count;
  }

  /**
   * Applies customer writes this process committed as `generation`. A write told before an earlier one of the import
   * writer waits for it; a gap no write of ours fills means another process wrote, and the next count reloads.
   */
  apply(changes: CustomerChange[], generation: number): void {
    if (this.queued) {
      this.queued.push({ changes, generation });
      return;
    }
    if (this.generation < 0 || generation <= this.generation) return; // not loaded, or already in what was loaded
    if (generation > this.generation + 1) {
      this.early.set(generation, changes);
      return;
    }
    this.applyNext(changes, generation);
    for (let next = this.early.get(this.generation + 1); next; next = this.early.get(this.generation + 1)) {
      this.early.delete(this.generation + 1);
      this.applyNext(next, this.generation + 1);
    }
  }

  /** Waits until the columns reflect every write this process has reported and any other process made. */
  private async current(): Promise<void> {
    for (;;) {
      if (this.generation < 0) this.ensureLoading();
      if (this.loading) {
        await this.loading;
        continue;
      }
      const elsewhere = writesElsewhereSettled(this.db);
      if (elsewhere) {
        // An import is being written on the writer's connection: what it committed is told here soon. Until then the
        // columns hold an earlier committed state, which is fine to count unless a later write of ours waits on it.
        if (this.early.size === 0) return;
        await elsewhere;
        continue;
      }
      if (this.early.size > 0 || this.changedElsewhere()) {
        this.generation = -1;
        this.early.clear();
        continue;
      }
      return;
    }
  }

  private applyNext(changes: CustomerChange[], generation: number): void {
    for (const { before, after } of changes) {
      if (after) {
        if (!this.upsert(after)) {
          this.generation = -1;
          return;
        }
      } else if (before) {
        const at = this.find(before.id);
        if (at >= 0) this.country[at] = -1;
      }
    }
    this.generation = generation;
  }

  private changedElsewhere(): boolean {
    const version = this.readDataVersion();
    if (version === this.dataVersion) return false;
    this.dataVersion = version;
    return this.readGeneration() !== this.generation;
  }

  private ensureLoading(): void {
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
  }

  /** Loads the columns, then applies the writes committed meanwhile; after a failure the next count retries. */
  private async load(): Promise<void> {
    try {
      await this.read();
    } catch (error) {
      // Nothing half-loaded is used: the next count tries again from scratch.
      this.queued = undefined;
      this.generation = -1;
      throw error;
    }
    const queued = this.queued ?? [];
    this.queued = undefined;
    this.early.clear();
    for (const { changes, generation } of queued) this.apply(changes, generation);
  }

  /** Reads every customer from a snapshot on a second connection, in chunks between which requests are served. */
  private async read(): Promise<void> {
    this.queued = [];
    this.dataVersion = this.readDataVersion();
    const reader = this.db.memory ? this.db : openReadConnection(this.db);
    try {
      if (reader !== this.db) reader.exec('BEGIN'); // one snapshot across all chunks
      const generation = generationReader(reader)();
      const total = reader.prepare('SELECT count(*) FROM customers').pluck().get() as number;
      this.allocate(Math.max(1024, Math.ceil(total * 1.1)));
      this.size = 0;
      this.codes.clear();
      this.byCountry = [];
      this.byCountryStale = false;
      const chunk = reader
        .prepare('SELECT id, country_key, total_transactions, amount_cents, last_activity_at FROM customers WHERE id > ? ORDER BY id LIMIT ?')
        .raw();
      // Rows are streamed, not collected per chunk, so loading leaves no large garbage on the heap.
      let after = 0;
      for (;;) {
        let read = 0;
        for (const [id, key, transactions, cents, lastActivityAt] of chunk.iterate(after, CHUNK) as Iterable<[number, string, number, number, number]>) {
          this.append(id, key, transactions, cents, lastActivityAt);
          after = id;
          read++;
        }
        if (read < CHUNK) break;
        if (reader !== this.db) await new Promise((resolve) => setImmediate(resolve));
      }
      if (reader !== this.db) reader.exec('COMMIT');
      this.generation = generation;
    } finally {
      if (reader !== this.db) reader.close();
    }
  }

  /** Counts the live rows within the bounds, and for how long after now the count stays exact as the clock moves. */
  private countNow(bounds: Bounds): { count: number; validFor: number } {
    const want = bounds.countryKey === undefined ? -1 : (this.codes.get(bounds.countryKey) ?? -2);
    if (want === -2) return { count: 0, validFor: Infinity };
    if (this.byCountryStale) this.rebuildByCountry();
    const list = want >= 0 ? (this.byCountry[want] ?? { rows: new Int32Array(0), size: 0 }) : undefined;
    const ranges = this.orderBySelectivity(
      [
        { column: this.transactions, lo: bounds.transactions[0], hi: bounds.transactions[1] },
        { column: this.cents, lo: bounds.cents[0], hi: bounds.cents[1] },
      ].filter((r) => r.lo !== -Infinity || r.hi !== Infinity),
      list,
    );
    const [aLo, aHi] = bounds.lastActivityAt;
    const r1 = ranges[0] ?? { column: this.cents, lo: -Infinity, hi: Infinity };
    const r2 = ranges[1] ?? r1;
    const { column: c1, lo: lo1, hi: hi1 } = r1;
    const { column: c2, lo: lo2, hi: hi2 } = r2;
    const { country, lastActivityAt: activity } = this;
    let count = 0;
    // As time passes, activity bounds move later: an included row drops out once the lower bound passes it, and a
    // row later than the upper bound comes in once the bound reaches it. The nearest of each decides how long the
    // count holds.
    let firstIncluded = Infinity;
    let firstLater = Infinity;
    // Two copies of one loop: over a country's rows, or over all rows. A shared loop that picks its row per step
    // runs about half as fast.
    if (list) {
      const { rows, size } = list;
      for (let k = 0; k < size; k++) {
        const i = rows[k]!;
        if (country[i] !== want) continue;
        const v1 = c1[i]!;
        if (v1 < lo1 || v1 > hi1) continue;
        const v2 = c2[i]!;
        if (v2 < lo2 || v2 > hi2) continue;
        const a = activity[i]!;
        if (a < aLo) continue;
        if (a > aHi) {
          if (a < firstLater) firstLater = a;
          continue;
        }
        if (a < firstIncluded) firstIncluded = a;
        count++;
      }
    } else {
      const { size } = this;
      for (let i = 0; i < size; i++) {
        if (country[i]! < 0) continue;
        const v1 = c1[i]!;
        if (v1 < lo1 || v1 > hi1) continue;
        const v2 = c2[i]!;
        if (v2 < lo2 || v2 > hi2) continue;
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
    const validFor = Math.min(aLo === -Infinity ? Infinity : firstIncluded - aLo + 1, aHi === Infinity ? Infinity : firstLater - aHi);
    return { count, validFor };
  }

  /** Returns the ranges ordered so the one that rejects most rows of a sample is checked first. */
  private orderBySelectivity(ranges: Range[], list: { rows: Int32Array; size: number } | undefined): Range[] {
    if (ranges.length < 2) return ranges;
    const end = list ? list.size : this.size;
    const step = Math.max(1, Math.floor(end / SAMPLE));
    const passing = ranges.map(({ column, lo, hi }) => {
      let n = 0;
      for (let k = 0; k < end; k += step) {
        const v = column[list ? list.rows[k]! : k]!;
        if (v >= lo && v <= hi) n++;
      }
      return n;
    });
    return ranges.map((range, i) => ({ range, passing: passing[i]! })).sort((a, b) => a.passing - b.passing).map((r) => r.range);
  }

  private rebuildByCountry(): void {
    this.byCountry = [];
    for (let i = 0; i < this.size; i++) if (this.country[i]! >= 0) this.addToCountry(this.country[i]!, i);
    this.byCountryStale = false;
  }

  private addToCountry(code: number, at: number): void {
    let list = this.byCountry[code];
    if (!list) {
      list = { rows: new Int32Array(1024), size: 0 };
      this.byCountry[code] = list;
    }
    if (list.size === list.rows.length) {
      const grown = new Int32Array(list.rows.length * 2);
      grown.set(list.rows);
      list.rows = grown;
    }
    list.rows[list.size++] = at;
  }

  private allocate(capacity: number): void {
    const grow = <T extends Float64Array | Int32Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old.subarray(0, Math.min(this.size, capacity)));
      return next;
    };
    this.ids = grow(this.ids, (n) => new Float64Array(n));
    this.country = grow(this.country, (n) => new Int32Array(n));
    this.transactions = grow(this.transactions, (n) => new Float64Array(n));
    this.cents = grow(this.cents, (n) => new Float64Array(n));
    this.lastActivityAt = grow(this.lastActivityAt, (n) => new Float64Array(n));
  }

  private code(key: string): number {
    let code = this.codes.get(key);
    if (code === undefined) {
      code = this.codes.size;
      this.codes.set(key, code);
    }
    return code;
  }

  private write(at: number, key: string, transactions: number, cents: number, lastActivityAt: number): void {
    this.country[at] = this.code(key);
    this.transactions[at] = transactions;
    this.cents[at] = cents;
    this.lastActivityAt[at] = lastActivityAt;
  }

  private append(id: number, key: string, transactions: number, cents: number, lastActivityAt: number): void {
    if (this.size === this.ids.length) this.allocate(Math.max(1024, this.size * 2));
    this.ids[this.size] = id;
    this.write(this.size, key, transactions, cents, lastActivityAt);
    this.addToCountry(this.country[this.size]!, this.size);
    this.size++;
  }

  /** Overwrites a known id or appends a new highest one; returns false for an unexpected id (then reload). */
  private upsert(c: StoredCustomer): boolean {
    const at = this.find(c.id);
    if (at >= 0) {
      const before = this.country[at]!;
      this.write(at, c.countryKey, c.totalTransactions, c.amountCents, c.lastActivityAt);
      if (this.country[at] !== before) this.byCountryStale = true;
    } else if (this.size === 0 || c.id > this.ids[this.size - 1]!) this.append(c.id, c.countryKey, c.totalTransactions, c.amountCents, c.lastActivityAt);
    else return false;
    return true;
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

/**
 * The key a count is remembered by: the bounds, with activity bounds taken relative to `now`. Every bound of a set
 * of conditions moves with the clock by exactly the time passed, so equal keys at two instants mean equal conditions.
 */
function boundsKey(bounds: Bounds, now: number): string {
  const [aLo, aHi] = bounds.lastActivityAt;
  return `${bounds.countryKey ?? ''}\n${bounds.transactions.join()}\n${bounds.cents.join()}\n${aLo - now},${aHi - now}`;
}
