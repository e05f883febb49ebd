// The one matching engine behind segment preview, save, update and get: the five matchable customer fields held
// in memory as columns, so any set of conditions is counted in one pass over typed arrays, whatever its
// selectivity, and counts are remembered until the customers change (or, for activity bounds, the clock moves far
// enough to change them).
import type { Bounds } from '../../domain/segments.ts';
import { AudienceColumns } from './columns.ts';
import type { ChangeSource } from '../change-feed.ts';
import { generationReader } from '../store/generation.ts';
import { statusIndex, type CustomerChange } from '../store/rows.ts';
import type { CustomerStatus } from '../../domain/customers.ts';
import { openReadConnection, type Db } from '../../db/database.ts';

const CHUNK = 50_000;

/** How many counts are remembered for the current generation. */
const REMEMBERED_COUNTS = 1000;

/** A remembered count: exact at `now` and for every later instant before `now + validFor`. */
interface Remembered {
  count: number;
  now: number;
  validFor: number;
}

/**
 * Column copy of the customers table (columns.ts), kept current by `apply` (told by the change source of each committed
 * write of this process) and reloaded when another process changed customers (`meta.customers_generation` moved on
 * unexpectedly).
 */
export class AudienceIndex {
  private readonly columns = new AudienceColumns();
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
  private readonly readDataVersion: () => number;

  /** Subscribes to the feed: every write this process commits is applied as it is published. */
  constructor(
    private readonly db: Db,
    private readonly feed: ChangeSource,
  ) {
    feed.subscribe((changes, generation) => this.apply(changes, generation));
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
    const counted = this.columns.count(bounds);
    if (this.remembered.size >= REMEMBERED_COUNTS) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(key, { ...counted, now });
    return counted.count;
  }

  /** Counts afresh, neither reading nor filling the remembered counts: what a count costs when nothing is remembered. */
  async countAfresh(bounds: Bounds | null): Promise<number> {
    await this.current();
    return bounds ? this.columns.count(bounds).count : 0;
  }

  /** Returns the bytes the columns hold and the rows and room they hold them for (the benchmark's bytes a customer). */
  async footprint(): Promise<{ bytes: number; rows: number; room: number }> {
    await this.current();
    return this.columns.footprint();
  }

  /**
   * Applies customer writes this process committed as `generation`. A write told before an earlier one of the import
   * writer waits for it; a gap no write of ours fills means another process wrote, and the next count reloads.
   */
  private apply(changes: CustomerChange[], generation: number): void {
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
      if (this.feed.writingElsewhere()) {
        // An import is being written on the writer's connection: what it committed is published here soon. Until
        // then the columns hold an earlier committed state, which is fine to count unless a later write of ours
        // waits on it; then look again once the feed moves.
        if (this.early.size === 0) return;
        await this.feed.nextChange();
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
        if (!this.columns.upsert(after)) {
          this.generation = -1;
          return;
        }
      } else if (before) this.columns.remove(before.id);
    }
    this.generation = generation;
  }

  private changedElsewhere(): boolean {
    const version = this.readDataVersion();
    if (version === this.dataVersion) return false;
    this.dataVersion = version;
    return this.feed.generation() !== this.generation;
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
      this.columns.clear(Math.max(1024, Math.ceil(total * 1.1)));
      const chunk = reader
        .prepare('SELECT id, country_key, status, total_transactions, amount_cents, last_activity_at FROM customers WHERE id > ? ORDER BY id LIMIT ?')
        .raw();
      // Rows are streamed, not collected per chunk, so loading leaves no large garbage on the heap.
      let after = 0;
      for (;;) {
        let read = 0;
        const rows = chunk.iterate(after, CHUNK) as Iterable<[number, string, CustomerStatus, number, number, number]>;
        for (const [id, key, status, transactions, cents, lastActivityAt] of rows) {
          this.columns.append(id, key, statusIndex(status), transactions, cents, lastActivityAt);
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
}

/**
 * The key a count is remembered by: every bound, with activity bounds taken relative to `now`. Every bound of a set
 * of conditions moves with the clock by exactly the time passed, so equal keys at two instants mean equal conditions.
 * Countries are written as JSON, so none (a country may hold a comma or a line break) can pass for another bound.
 */
function boundsKey(bounds: Bounds, now: number): string {
  const { countryKeys, excludedCountryKeys, statuses, transactions, cents, lastActivityAt } = bounds;
  const [aLo, aHi] = lastActivityAt;
  return `${JSON.stringify(countryKeys ?? null)}\n${JSON.stringify(excludedCountryKeys)}\n${statuses}\n${transactions.join()}\n${cents.join()}\n${aLo - now},${aHi - now}`;
}
