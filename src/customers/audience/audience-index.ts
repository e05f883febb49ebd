// The one matching engine behind segment preview, save, update and get: the five matchable customer fields held
// in memory as columns, so any set of conditions is counted in one pass over typed arrays, whatever its
// selectivity, and counts are remembered until the customers change (or, for activity bounds, the clock moves far
// enough to change them). Engine-agnostic: where the customers are loaded from, and how the index learns of changes
// its change source did not tell one by one, is its `AudienceSource` (sqlite-source.ts, ../postgres/audience-source.ts).
import type { Bounds } from '../../domain/segments.ts';
import { AudienceColumns } from './columns.ts';
import type { ChangeSource } from '../change-feed.ts';
import type { CustomerChange } from '../store/rows.ts';

/** How many counts are remembered for the current generation. */
const REMEMBERED_COUNTS = 1000;

/** A remembered count: exact at `now` and for every later instant before `now + validFor`. */
interface Remembered {
  count: number;
  now: number;
  validFor: number;
}

/** Where the audience index reads customers from, and how it learns that its columns may have missed changes. */
export interface AudienceSource {
  /**
   * Empties `columns` and fills them with every customer of one consistent snapshot, in id order, yielding to the
   * event loop between chunks; resolves to that snapshot's customers generation.
   */
  load(columns: AudienceColumns): Promise<number>;
  /**
   * Whether customers may have changed in ways the change source did not publish, the columns reflecting
   * `generation`: then the index reloads before counting.
   */
  changedElsewhere(generation: number): boolean;
  /** Calls `listener` when the columns must be read again from a snapshot at or after `generation`; returns the function that stops it. */
  onReload?(listener: (generation: number) => void): () => void;
}

/** A published write, or a reload told while a load ran (`changes` undefined). */
type Told = { changes: CustomerChange[] | undefined; generation: number };

/**
 * Column copy of the customers table (columns.ts), kept current by `apply` (told by the change source of each committed
 * write) and reloaded when the source says customers changed unseen (SQLite: another process wrote; PostgreSQL: the
 * change feed asked for a reload).
 */
export class AudienceIndex {
  private readonly columns = new AudienceColumns();
  /** The customers generation the columns reflect; -1 before the first load. */
  private generation = -1;
  private loading: Promise<void> | undefined;
  /** Writes (and reloads) told while a load runs, applied once it ends. */
  private queued: Told[] | undefined;
  /** Writes told ahead of an earlier generation still on its way from the import writer, by generation. */
  private early = new Map<number, CustomerChange[]>();
  private remembered = new Map<string, Remembered>();
  private rememberedGeneration = -1;

  /** Subscribes to the feed (every published write is applied as it is published) and to the source's reloads. */
  constructor(
    private readonly source: AudienceSource,
    private readonly feed: ChangeSource,
  ) {
    feed.subscribe((changes, generation) => this.apply(changes, generation));
    source.onReload?.((generation) => this.reload(generation));
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
   * Forgets the columns unless they already reflect `generation`: the next count loads them again. Told during a
   * load, it waits its turn with the writes told meanwhile (the load's snapshot may already hold it).
   */
  private reload(generation: number): void {
    if (this.queued) {
      this.queued.push({ changes: undefined, generation });
      return;
    }
    if (generation <= this.generation) return;
    this.generation = -1;
    this.early.clear();
  }

  /**
   * Applies customer writes committed as `generation`. A write told before an earlier one of the import
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
      if (this.early.size > 0 || this.source.changedElsewhere(this.generation)) {
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

  private ensureLoading(): void {
    if (this.loading) return;
    this.loading = this.load().finally(() => {
      this.loading = undefined;
    });
    // A load nobody awaits (`warm`, or one the database closed under) fails quietly: the next count loads again and
    // gets the error.
    this.loading.catch(() => {});
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
    for (const { changes, generation } of queued) {
      if (changes) this.apply(changes, generation);
      else this.reload(generation);
    }
  }

  /** Reads every customer from one snapshot of the source; writes told meanwhile are queued. */
  private async read(): Promise<void> {
    this.queued = [];
    this.generation = await this.source.load(this.columns);
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
