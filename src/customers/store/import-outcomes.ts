// What an import does with a stored email, and what became of each imported record: the vocabulary shared by the
// write transactions (writes.ts), the import writer's group commits and a CSV job's transactions.
import type { CustomerRecord } from '../../domain/customers.ts';
import type { StoredCustomer } from './rows.ts';

/** What an import does with a row whose email is stored: report it (`skip`) or replace the stored fields (`update`). */
export type OnExisting = 'skip' | 'update';

/** A stored customer whose fields an imported record replaced: as it was, and as it is now (equal when nothing changed). */
export interface Replaced {
  before: StoredCustomer;
  after: StoredCustomer;
}

/**
 * What became of one imported record: a new customer, a replaced one, undefined when its email was stored (skipping),
 * or null when an earlier record of the same job had taken it (updating).
 */
export type Imported = StoredCustomer | Replaced | undefined | null;

/** Whether an imported record replaced a stored customer. */
export function isReplaced(imported: Imported): imported is Replaced {
  return imported !== undefined && imported !== null && 'before' in imported;
}

/** The customers a job has stored or replaced so far, by id: a later record with the same email repeats an earlier one. */
export class CustomerIdSet {
  private bits = new Uint8Array(1 << 16);

  has(id: number): boolean {
    return id >> 3 < this.bits.length && (this.bits[id >> 3]! & (1 << (id & 7))) !== 0;
  }

  add(id: number): void {
    if (id >> 3 >= this.bits.length) {
      const grown = new Uint8Array(Math.max(this.bits.length * 2, (id >> 3) + 1));
      grown.set(this.bits);
      this.bits = grown;
    }
    this.bits[id >> 3]! |= 1 << (id & 7);
  }
}

/** A batch of an import: its records, the instant that stamps them, and what to do with a stored email. */
export interface ImportBatch {
  records: readonly CustomerRecord[];
  now: number;
  onExisting?: OnExisting;
}

/** What a batch became: each record's outcome; or the error that undid it. */
export type BatchResult = { stored: Imported[] } | { error: unknown };
