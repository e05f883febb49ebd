// The one change source of the customer subsystem: every committed customer write of this process is published here,
// in commit order, with its generation; what keeps state derived from customers (the audience index, the search
// counts, the assistant's grounding) subscribes or reads the generation here, and nowhere else.
//
// `ChangeSource` is what those readers and the writers depend on. `CustomerChangeFeed` implements it within one
// process over SQLite: writes of other processes show as the generation moving (meta.customers_generation).
// `PgChangeFeed` (postgres/change-feed.ts) implements it over PostgreSQL's change log: each write's changes stored
// with its generation in its transaction and announced with NOTIFY, so every instance's subscribers hear every
// instance's writes.
import type { Db } from '../db/database.ts';
import type { CustomerChange } from './store/rows.ts';
import { generationReader } from './store/generation.ts';

/** Told after each committed write, in commit order: what changed, and the write's generation. */
export type CustomerChangeListener = (changes: CustomerChange[], generation: number) => void;

/** Where committed customer writes are told, and how a reader knows whether it has heard all of them. */
export interface ChangeSource {
  /** Calls `listener` after every write published from now on; returns the function that stops it. */
  subscribe(listener: CustomerChangeListener): () => void;
  /** Tells every subscriber of a committed write; called by the writer right after the commit, in commit order. */
  publish(changes: CustomerChange[], generation: number): void;
  /** Returns the committed customers generation: one more for every committed customer write, whoever wrote it. */
  generation(): number;
  /**
   * Records a write handed to another connection (the import writer thread) whose changes are published later; call
   * the returned function once they have been (or the write failed). Calling it again does nothing.
   */
  beginWriteElsewhere(): () => void;
  /** Whether a write handed to another connection may still commit and be published. */
  writingElsewhere(): boolean;
  /** Resolves at the next publish, or when a write handed elsewhere ends: the moment for a reader to look again. */
  nextChange(): Promise<void>;
}

/**
 * What every change source does besides knowing the generation: tells its subscribers, counts the writes handed to
 * another connection that are not published yet, and wakes the readers waiting for the next change. Each engine's
 * feed extends it.
 */
export abstract class ChangeListeners implements ChangeSource {
  private readonly listeners = new Set<CustomerChangeListener>();
  /** Writes sent to another connection and not yet reported as published (or failed). */
  private elsewhere = 0;
  private waiters: (() => void)[] = [];

  abstract generation(): number;

  subscribe(listener: CustomerChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(changes: CustomerChange[], generation: number): void {
    for (const listener of this.listeners) listener(changes, generation);
    this.wake();
  }

  beginWriteElsewhere(): () => void {
    this.elsewhere++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.elsewhere--;
      this.wake();
    };
  }

  writingElsewhere(): boolean {
    return this.elsewhere > 0;
  }

  nextChange(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  protected wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/**
 * The change source of one process over SQLite: publishes its customer writes to its subscribers, reads the committed
 * generation from the database (it moves for writes of other processes too), and counts the writes handed to another
 * connection (the import writer thread) that have not been published yet.
 */
export class CustomerChangeFeed extends ChangeListeners {
  private readonly readGeneration: () => number;

  constructor(db: Db) {
    super();
    this.readGeneration = generationReader(db);
  }

  generation(): number {
    return this.readGeneration();
  }
}
