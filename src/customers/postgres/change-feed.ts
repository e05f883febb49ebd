// The change source (../change-feed.ts) on PostgreSQL: every instance's customer writes, read from the change log
// table `customer_changes` that the triggers on customers fill in each write's transaction (schema.sql), and
// published here in generation order. A write's commit sends NOTIFY 'customer_changes'; every instance listening
// catches up from the log on hearing it, and the writer itself awaits `catchUp()` before answering, so what a client
// saw acknowledged is already in this instance's derived state (read-your-writes).
//
// Generations are dense and commit in order (each writing transaction holds meta.customers_generation's row lock to
// its commit), so one snapshot holds every generation up to the committed one: a catch-up reads them all in one
// REPEATABLE READ snapshot and publishes each in turn. A generation that logged nothing is published as no changes,
// so subscribers always see generations one after the other. A 'reload' row (a seed, a move) or a reader left behind
// by pruning makes subscribers reload from a snapshot instead (`onReload`).
//
// Pruning: the log keeps at least the last hour (KEEP_FOR) of generations, enough for an instance that restarted or
// lagged to catch up rather than reload. Every PRUNE_EVERY, the instance that leads 'change-log' notes the generation
// it has published and deletes the generations it had published KEEP_FOR ago; meta.customer_changes_pruned records
// the highest deleted generation, so a reader still below it knows rows it needs are gone and reloads.
import type { PostgresEngine } from '../../db/pg-engine.ts';
import { classifyDatabaseError } from '../../db/unavailable.ts';
import { ChangeListeners } from '../change-feed.ts';
import type { CustomerChange, CustomerFacts } from '../store/rows.ts';
import type { CustomerStatus } from '../../domain/customers.ts';

/** The channel the triggers on customers notify, with the generation as payload. */
export const CHANGES_CHANNEL = 'customer_changes';

/** Log rows fetched per round trip while catching up. */
const CHUNK = 10_000;
/** How long a generation stays in the log after the pruning leader has published it. */
const KEEP_FOR = 60 * 60_000;
/** How often the pruning leader looks. */
const PRUNE_EVERY = 5 * 60_000;

/** A log row as fetched: generation, op, customer id, then the five facts of an upsert. */
type LogRow = [number, 'upsert' | 'delete' | 'reload', number | null, string | null, CustomerStatus | null, number | null, number | null, number | null];

/** Told that changes were missed (a 'reload' row, or the log pruned past this reader): reload from a snapshot at or after `generation`. */
export type ReloadListener = (generation: number) => void;

export interface PgChangeFeedOptions {
  /** Keep each generation this long (ms) after the pruning leader published it. */
  keepFor?: number;
  /** Look this often (ms) whether to prune; 0 for never on a timer (tests call `prune`). */
  pruneEvery?: number;
  clock?: () => number;
  /** Told of a catch-up or a pruning that failed with nobody awaiting it. */
  onError?: (error: unknown) => void;
}

/** The change source of one instance over PostgreSQL's change log: call `start()` before use and `close()` after. */
export class PgChangeFeed extends ChangeListeners {
  private readonly reloadListeners = new Set<ReloadListener>();
  /** The last generation published (or skipped by a reload); 0 until started. */
  private published = 0;
  private started = false;
  private starting: Promise<void> | undefined;
  /** A notification heard before the generation was first read: catch up once started. */
  private heardEarly = false;
  /** The catch-up reading now, and the one that will read after it (for calls made meanwhile). */
  private reading: Promise<void> | undefined;
  private nextReading: Promise<void> | undefined;
  private stopListening: (() => void) | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  /** (instant, generation published then), oldest first: what the pruning leader may delete once KEEP_FOR old. */
  private marks: { at: number; generation: number }[] = [];
  private readonly keepFor: number;
  private readonly pruneEvery: number;
  private readonly clock: () => number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly engine: PostgresEngine,
    { keepFor = KEEP_FOR, pruneEvery = PRUNE_EVERY, clock = Date.now, onError = () => {} }: PgChangeFeedOptions = {},
  ) {
    super();
    this.keepFor = keepFor;
    this.pruneEvery = pruneEvery;
    this.clock = clock;
    this.onError = onError;
  }

  /**
   * Listens for other instances' writes, then takes the committed generation as the starting point (what is committed
   * later is heard). Resolves once listening; rejects when the generation cannot be read. Calling it again returns
   * the first call's promise.
   */
  start(): Promise<void> {
    this.starting ??= this.listenAndRead();
    return this.starting;
  }

  private async listenAndRead(): Promise<void> {
    let first = true;
    await new Promise<void>((listening) => {
      this.stopListening = this.engine.listen(
        CHANGES_CHANNEL,
        () => this.follow(),
        () => {
          // Notifications sent while the connection was lost are lost too: catch up on each reconnection.
          if (first) listening();
          else this.follow();
          first = false;
        },
      );
    });
    this.published = await this.committedGeneration();
    this.started = true;
    if (this.heardEarly) this.follow();
    if (this.pruneEvery > 0) {
      this.pruneTimer = setInterval(() => void this.prune().catch(this.onError), this.pruneEvery);
      this.pruneTimer.unref();
    }
  }

  /** Calls `listener` when subscribers must reload (changes were not published one by one); returns the function that stops it. */
  onReload(listener: ReloadListener): () => void {
    this.reloadListeners.add(listener);
    return () => this.reloadListeners.delete(listener);
  }

  /** The last generation published by this instance (every write it has caught up with, by any instance). */
  generation(): number {
    return this.published;
  }

  /**
   * Resolves once every write committed before the call is published; rejects when the log cannot be read (AppError
   * `unavailable` when no primary answers), or the feed was never started. Calls made while a read runs share the next one.
   */
  catchUp(): Promise<void> {
    if (!this.started) return this.starting ? this.starting.then(() => this.catchUp()) : Promise.reject(new Error('The change feed was not started.'));
    if (!this.reading) {
      // A write awaiting this answers its client with what failed: `unavailable` when no primary answers.
      this.reading = this.readLog()
        .catch((error: unknown) => Promise.reject(classifyDatabaseError(error)))
        .finally(() => {
          this.reading = undefined;
        });
      return this.reading;
    }
    // The read under way may have taken its snapshot before this call's write committed: wait for the next one.
    this.nextReading ??= this.reading
      .catch(() => {})
      .then(() => {
        this.nextReading = undefined;
        return this.catchUp();
      });
    return this.nextReading;
  }

  /**
   * When this instance leads 'change-log': notes the generation published now and deletes the generations published
   * at least `keepFor` ago. Resolves to the rows deleted.
   */
  async prune(): Promise<number> {
    if (!(await this.engine.leadership.tryLead('change-log'))) {
      this.marks = []; // another instance prunes; marks from before a later turn as leader would be stale
      return 0;
    }
    const now = this.clock();
    this.marks.push({ at: now, generation: this.published });
    let through = 0;
    while (this.marks.length > 0 && now - this.marks[0]!.at >= this.keepFor) through = this.marks.shift()!.generation;
    if (through === 0) return 0;
    // Its own transaction, as a catch-up's: the timer may have been set from within a transaction's context.
    return this.engine.transaction('read write', async (tx) => {
      // The mark first, in the same transaction: a snapshot sees both the mark and the rows gone, or neither.
      await tx`INSERT INTO meta (key, value) VALUES ('customer_changes_pruned', ${through})
               ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value, excluded.value)`;
      const deleted = await tx`DELETE FROM customer_changes WHERE generation <= ${through}`;
      return deleted.count;
    });
  }

  /** Stops listening and pruning; resolves once a catch-up under way has ended. */
  async close(): Promise<void> {
    // A start under way is let finish first: it listens and reads, and would do so on a closed pool.
    await this.starting?.catch(() => {});
    this.stopListening?.();
    this.stopListening = undefined;
    clearInterval(this.pruneTimer);
    await this.nextReading?.catch(() => {});
    await this.reading?.catch(() => {});
  }

  /** Catches up on a notification; nobody awaits it, so a failure is reported to onError (the next one retries). */
  private follow(): void {
    if (!this.started) {
      this.heardEarly = true;
      return;
    }
    this.catchUp().catch(this.onError);
  }

  private async committedGeneration(): Promise<number> {
    const [row] = await this.engine.transaction('read only', (tx) => tx<{ value: number }[]>`
      SELECT coalesce((SELECT value FROM meta WHERE key = 'customers_generation'), 0) AS value`);
    return row!.value;
  }

  /**
   * Reads the generations above the published one from one snapshot, and publishes them in order. Its own
   * transaction on the pool, never one the caller's context has open: the log is read as committed.
   */
  private async readLog(): Promise<void> {
    await this.engine.transaction('read only', async (tx) => {
      const [marks] = await tx<{ committed: number; pruned: number }[]>`
        SELECT coalesce((SELECT value FROM meta WHERE key = 'customers_generation'), 0) AS committed,
               coalesce((SELECT value FROM meta WHERE key = 'customer_changes_pruned'), 0) AS pruned`;
      const { committed, pruned } = marks!;
      if (committed <= this.published) return;
      if (this.published < pruned) {
        this.reload(committed); // rows this instance has not read are gone
        return;
      }
      const rows = tx`
        SELECT generation, op, customer_id, country_key, status, total_transactions, amount_cents, last_activity_at
        FROM customer_changes WHERE generation > ${this.published} AND generation <= ${committed}
        ORDER BY generation, seq`.values();
      let generation = 0;
      let changes: CustomerChange[] = [];
      let reload = false;
      for await (const chunk of rows.cursor(CHUNK) as AsyncIterable<LogRow[]>) {
        for (const row of chunk) {
          if (row[0] !== generation) {
            if (generation > 0) this.advance(generation, reload ? undefined : changes);
            generation = row[0];
            changes = [];
            reload = false;
          }
          if (row[1] === 'reload') reload = true;
          else if (!reload) changes.push(changeOf(row));
        }
      }
      if (generation > 0) this.advance(generation, reload ? undefined : changes);
      if (committed > this.published) this.advance(committed, []);
    });
  }

  /** Publishes `generation` (changes, or a reload for undefined), each earlier one that logged nothing first as no changes. */
  private advance(generation: number, changes: CustomerChange[] | undefined): void {
    while (this.published < generation - 1) {
      this.published++;
      this.publish([], this.published);
    }
    this.published = generation;
    if (changes) this.publish(changes, generation);
    else this.reload(generation);
  }

  /** Tells reload listeners that everything up to `generation` must be read from a snapshot. */
  private reload(generation: number): void {
    this.published = generation;
    for (const listener of this.reloadListeners) listener(generation);
    this.wake();
  }
}

/**
 * Returns a log row as a change: an upsert's facts after, or a delete's id before. The log keeps only a deleted
 * customer's id, all any reader needs of what a delete removed.
 */
function changeOf([, op, id, countryKey, status, totalTransactions, amountCents, lastActivityAt]: LogRow): CustomerChange {
  if (op === 'delete') return { before: { id } as CustomerFacts, after: undefined };
  return { before: undefined, after: { id: id!, countryKey: countryKey!, status: status!, totalTransactions: totalTransactions!, amountCents: amountCents!, lastActivityAt: lastActivityAt! } };
}
