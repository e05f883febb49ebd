// The one change feed of the customer subsystem: every committed customer write of this process is published here,
// in commit order, with its generation; what keeps state derived from customers (the audience index, the search
// counts, the assistant's grounding) subscribes or reads the generation here, and nowhere else.
import type { Db } from '../db/database.ts';
import type { CustomerChange } from './store/rows.ts';
import { generationReader } from './store/generation.ts';

/** Told after each committed write, in commit order: what changed, and the write's generation. */
export type CustomerChangeListener = (changes: CustomerChange[], generation: number) => void;

/**
 * Publishes this process's customer writes to its subscribers, and knows two more things a reader needs: the
 * committed generation (which moves for writes of other processes too), and the writes handed to another
 * connection (the import writer thread) that have not been published yet.
 */
export class CustomerChangeFeed {
  private readonly listeners = new Set<CustomerChangeListener>();
  private readonly readGeneration: () => number;
  /** Writes sent to another connection and not yet reported as published (or failed). */
  private elsewhere = 0;
  private waiters: (() => void)[] = [];

  constructor(db: Db) {
    this.readGeneration = generationReader(db);
  }

  /** Calls `listener` after every write published from now on; returns the function that stops it. */
  subscribe(listener: CustomerChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every subscriber of a committed write; called by the store right after the commit, in commit order. */
  publish(changes: CustomerChange[], generation: number): void {
    for (const listener of this.listeners) listener(changes, generation);
    this.wake();
  }

  /** Returns the committed customers generation as the database holds it now, whoever wrote last. */
  generation(): number {
    return this.readGeneration();
  }

  /**
   * Records a write sent to another connection of this process; call the returned function once it has been
   * published (or has failed). Idempotent.
   */
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

  /** Whether a write sent to another connection (an import, a CSV job) may still commit and be published. */
  writingElsewhere(): boolean {
    return this.elsewhere > 0;
  }

  /** Resolves at the next publish, or when a write sent elsewhere ends: the moment to look again. */
  nextChange(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
