// The one matching engine behind segment preview, save, update and get: the four matchable customer fields held
// in memory as columns, so any set of conditions is counted in one pass over typed arrays, whatever its
// selectivity (a few milliseconds at a million customers, where SQLite needs a full scan).
import type { Bounds } from '../domain/segments.ts';
import { generationReader, writesElsewhereSettled } from './customer-generation.ts';
import type { CustomerChange, StoredCustomer } from './customer-rows.ts';
import { openReadConnection, type Db } from './database.ts';

export type { CustomerChange } from './customer-rows.ts';

const CHUNK = 50_000;

/**
 * Column copy of the customers table, kept current by `apply` (told of each committed write of this process)
 * and reloaded when another process changed customers (`meta.customers_generation` moved on unexpectedly).
 * Rows are kept in id order; deleted rows stay as tombstones (country code -1) until the next reload.
 */
export class AudienceIndex {
  private size = 0;
  private ids = new Float64Array(0);
  private country = new Int32Array(0);
  private transactions = new Float64Array(0);
  private cents = new Float64Array(0);
  private lastActivityAt = new Float64Array(0);
  private readonly codes = new Map<string, number>();
  /** The customers generation the columns reflect; -1 before the first load. */
  private generation = -1;
  private dataVersion = -1;
  private loading: Promise<void> | undefined;
  /** Writes committed while a load runs, applied once it ends. */
  private queued: { changes: CustomerChange[]; generation: number }[] | undefined;
  /** Writes told ahead of an earlier generation still on its way from the import writer, by generation. */
  private early = new Map<number, CustomerChange[]>();
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

  /** Returns how many customers lie within the bounds (0 for `null`); waits for a load when one is needed. */
  async count(bounds: Bounds | null): Promise<number> {
    await this.current();
    if (!bounds) return 0;
    const want = bounds.countryKey === undefined ? -1 : (this.codes.get(bounds.countryKey) ?? -2);
    if (want === -2) return 0;
    const [tLo, tHi] = bounds.transactions;
    const [cLo, cHi] = bounds.cents;
    const [aLo, aHi] = bounds.lastActivityAt;
    const { country, transactions, cents, lastActivityAt, size } = this;
    let matches = 0;
    for (let i = 0; i < size; i++) {
      const code = country[i]!;
      if (code < 0 || (want >= 0 && code !== want)) continue;
      const t = transactions[i]!;
      if (t < tLo || t > tHi) continue;
      const c = cents[i]!;
      if (c < cLo || c > cHi) continue;
      const a = lastActivityAt[i]!;
      if (a < aLo || a > aHi) continue;
      matches++;
    }
    return matches;
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
    this.size++;
  }

  /** Overwrites a known id or appends a new highest one; returns false for an unexpected id (then reload). */
  private upsert(c: StoredCustomer): boolean {
    const at = this.find(c.id);
    if (at >= 0) this.write(at, c.countryKey, c.totalTransactions, c.amountCents, c.lastActivityAt);
    else if (this.size === 0 || c.id > this.ids[this.size - 1]!) this.append(c.id, c.countryKey, c.totalTransactions, c.amountCents, c.lastActivityAt);
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
