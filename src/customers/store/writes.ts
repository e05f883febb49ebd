// The customer write transactions: insert (batches of records, or imports that update stored emails), update, delete.
// Each keeps the search index, the aggregate tables and the generation in the same transaction as the rows. Used by the service's connection and by
// the import writer's (imports/writer.thread.ts). Knows no HTTP.
import { AppError } from '../../domain/errors.ts';
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import { bindInsert, INSERT_COLUMNS, INSERT_WIDTH, insertPlaceholders, sameFields, UPDATE_ASSIGNMENTS } from './fields.ts';
import { generationBumper } from './generation.ts';
import { searchText, toStored, type CustomerChange, type CustomerRow, type StoredCustomer } from './rows.ts';
import { createCustomerStats, StatsDelta } from './stats.ts';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import { CustomerIdSet, type BatchResult, type ImportBatch, type Imported } from './import-outcomes.ts';

export { CustomerIdSet, isReplaced, type BatchResult, type ImportBatch, type Imported, type OnExisting, type Replaced } from './import-outcomes.ts';

export type CustomerWrites = ReturnType<typeof createCustomerWrites>;

/**
 * Inserted rows have their search text indexed as the transaction goes, not all at its end: an import job's
 * transaction ends soon after a write of the service asks for the lock, and the trigram index of every row it held
 * (about 23 µs a row on a slow machine) made that write wait longer the more rows it held (commits of a job into a
 * million: p50 60 ms, p99 158 before; 37-42 and 99-134 after). Not row by row: each statement writes its rows'
 * trigrams to the index as a new segment, to be merged later. So a statement indexes this many rows, or as many as
 * the transaction has indexed before, whichever is more: at most half a transaction's rows wait for its end, and a
 * job's transaction of 20,000 rows (none waiting for it) writes 6 segments, not 40. With 500 rows at a time whatever
 * the transaction, such transactions went about 6% slower in process, and a job's log between two restarts grew
 * from 1.1-1.2 times its database to 1.2-1.5.
 */
const TEXT_CHUNK_ROWS = 500;

/** Returns the write transactions on `db`, with their statements prepared once. */
export function createCustomerWrites(db: Db) {
  const stats = createCustomerStats(db);
  const bump = generationBumper(db);
  const byId = db.prepare<[number], CustomerRow>('SELECT * FROM customers WHERE id = ?');
  const byEmail = db.prepare<[string], CustomerRow>('SELECT * FROM customers WHERE email = ?');
  const insert = db.prepare(`INSERT INTO customers ${INSERT_COLUMNS} VALUES ${insertPlaceholders(1)} ON CONFLICT (email) DO NOTHING`);
  // One array for every insert's values: the statements run one at a time, and each binds them before the next.
  const insertValues: unknown[] = new Array(INSERT_WIDTH);
  const update = db.prepare(`UPDATE customers SET ${UPDATE_ASSIGNMENTS} WHERE id = @id`);
  const remove = db.prepare('DELETE FROM customers WHERE id = ?');
  const indexText = db.prepare('INSERT INTO customer_search (rowid, text) VALUES (?, ?)');
  const unindexText = db.prepare('DELETE FROM customer_search WHERE rowid = ?');
  const lastId = db.prepare("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'customers'), 0)").pluck();
  // The rows a batch added have every id above the last one before it: this transaction is the only writer.
  const indexTextFrom = db.prepare(`INSERT INTO customer_search (rowid, text) SELECT id, name || char(10) || email FROM customers WHERE id > ?`);

  /**
   * Inserts the records `next` hands out one at a time (until it returns undefined) and indexes their search text
   * as it goes, in statements of TEXT_CHUNK_ROWS rows or as many as it indexed before; adds them to `delta`.
   */
  const insertEach = (next: () => CustomerRecord | undefined, now: number, delta: StatsDelta): (StoredCustomer | undefined)[] => {
    let indexedTo = lastId.get() as number;
    let indexed = 0;
    let unindexed = 0;
    const stored: (StoredCustomer | undefined)[] = [];
    for (let r = next(); r !== undefined; r = next()) {
      const key = countryKey(r.country);
      const result = insert.run(bindInsert(insertValues, 0, r, now));
      if (result.changes === 0) {
        stored.push(undefined);
        continue;
      }
      const customer: StoredCustomer = {
        id: Number(result.lastInsertRowid),
        name: r.name,
        email: r.email,
        country: r.country,
        countryKey: key,
        totalTransactions: r.totalTransactions,
        amountCents: r.amountCents,
        lastActivityAt: r.lastActivityAt,
        status: r.status,
      };
      delta.add(customer, 1);
      stored.push(customer);
      if (++unindexed >= Math.max(TEXT_CHUNK_ROWS, indexed)) {
        indexTextFrom.run(indexedTo);
        indexedTo = customer.id;
        indexed += unindexed;
        unindexed = 0;
      }
    }
    if (unindexed > 0) indexTextFrom.run(indexedTo);
    return stored;
  };

  /**
   * Stores the records `next` hands out one at a time: a new email is inserted (its search text indexed as
   * `insertEach` does), a stored one has its fields replaced by the record's (rewritten only when they differ), unless
   * `seen` says this job stored or replaced that customer already (null). Adds every change to `delta`.
   */
  const upsertEach = (next: () => CustomerRecord | undefined, now: number, delta: StatsDelta, seen?: CustomerIdSet): Imported[] => {
    let indexedTo = lastId.get() as number;
    let lastInserted = indexedTo;
    const out: Imported[] = [];
    for (let r = next(); r !== undefined; r = next()) {
      const row = byEmail.get(r.email);
      if (!row) {
        const key = countryKey(r.country);
        const result = insert.run(bindInsert(insertValues, 0, r, now));
        const customer: StoredCustomer = { ...r, id: Number(result.lastInsertRowid), countryKey: key };
        lastInserted = customer.id;
        seen?.add(customer.id);
        delta.add(customer, 1);
        out.push(customer);
        if (lastInserted - indexedTo >= TEXT_CHUNK_ROWS) {
          indexTextFrom.run(indexedTo);
          indexedTo = lastInserted;
        }
        continue;
      }
      if (seen?.has(row.id)) {
        out.push(null);
        continue;
      }
      seen?.add(row.id);
      const before = toStored(row);
      if (sameFields(before, r)) {
        out.push({ before, after: before });
        continue;
      }
      // A customer inserted earlier in this transaction may not be in the search index yet: index it before it changes.
      if (row.id > indexedTo) {
        indexTextFrom.run(indexedTo);
        indexedTo = lastInserted;
      }
      const after: StoredCustomer = { ...r, id: row.id, email: row.email, countryKey: countryKey(r.country) };
      update.run({ ...after, now });
      if (after.name !== before.name) {
        unindexText.run(row.id);
        indexText.run(row.id, searchText(after.name, after.email));
      }
      delta.add(before, -1);
      delta.add(after, 1);
      out.push({ before, after });
    }
    if (lastInserted > indexedTo) indexTextFrom.run(indexedTo);
    return out;
  };

  /** Stores one batch's records as its `onExisting` says; adds them to `delta`. */
  const importBatch = ({ records, now, onExisting }: ImportBatch, delta: StatsDelta): Imported[] => {
    let i = 0;
    const next = () => records[i++];
    return onExisting === 'update' ? upsertEach(next, now, delta) : insertEach(next, now, delta);
  };

  /** Every batch in one transaction that counts one generation. */
  const insertAll = db.transaction((batches: readonly ImportBatch[]) => {
    const delta = new StatsDelta();
    const stored = batches.map((batch) => importBatch(batch, delta));
    stats.apply(delta);
    return { stored, generation: bump() };
  });

  /** The records `next` hands out, and whatever `also` writes about them, in one transaction that counts one generation. */
  const insertWith = db.transaction((next: () => CustomerRecord | undefined, now: number, also: (stored: (StoredCustomer | undefined)[]) => void) => {
    const delta = new StatsDelta();
    const stored = insertEach(next, now, delta);
    stats.apply(delta);
    also(stored);
    return { stored, generation: bump() };
  });

  /** As `insertWith`, replacing the fields of customers whose email is stored (see `upsertEach`). */
  const upsertWith = db.transaction((next: () => CustomerRecord | undefined, now: number, seen: CustomerIdSet, also: (stored: Imported[]) => void) => {
    const delta = new StatsDelta();
    const stored = upsertEach(next, now, delta, seen);
    stats.apply(delta);
    also(stored);
    return { stored, generation: bump() };
  });

  return {
    stats,

    /**
     * Stores every batch (its records, stamped `now`, as its `onExisting` says) in one transaction that counts one generation. Should that
     * transaction fail, each batch is tried in a transaction of its own, so one failing batch cannot take the others
     * with it. (Savepoints per batch would copy every page a batch touches to a sub-journal: most of the cost of a
     * large import.) Returns each batch's result and the commits made: their generations and batches, in order.
     */
    insertBatches(batches: readonly ImportBatch[]): {
      results: BatchResult[];
      commits: { generation: number; batches: number[] }[];
    } {
      try {
        const { stored, generation } = insertAll.immediate(batches);
        return { results: stored.map((s) => ({ stored: s })), commits: [{ generation, batches: batches.map((_, i) => i) }] };
      } catch (error) {
        if (batches.length === 1) return { results: [{ error }], commits: [] };
      }
      const commits: { generation: number; batches: number[] }[] = [];
      const results = batches.map((batch, i): BatchResult => {
        try {
          const alone = insertAll.immediate([batch]);
          commits.push({ generation: alone.generation, batches: [i] });
          return { stored: alone.stored[0]! };
        } catch (error) {
          return { error };
        }
      });
      return { results, commits };
    },

    /**
     * Inserts the records `next` hands out one at a time until it returns undefined (so the caller decides, row by
     * row, when the transaction ends), stamped `now`, and runs `also` with what became of each (undefined for a taken
     * email), all in one transaction that counts one generation; returns the same and the generation. Throws what
     * undid it.
     */
    insertWith(next: () => CustomerRecord | undefined, now: number, also: (stored: (StoredCustomer | undefined)[]) => void) {
      return insertWith.immediate(next, now, also);
    },

    /**
     * As `insertWith`, but a record whose email is stored replaces that customer's fields, in the same transaction;
     * one whose customer `seen` holds (this job stored or replaced it already) is null. Throws what undid it.
     */
    upsertWith(next: () => CustomerRecord | undefined, now: number, seen: CustomerIdSet, also: (stored: Imported[]) => void) {
      return upsertWith.immediate(next, now, seen, also);
    },

    /** Applies the changes to one customer; throws `not_found`, or `conflict` when the email is taken. */
    updateOne: db.transaction((id: number, changes: Partial<CustomerRecord>, now: number) => {
      const row = byId.get(id);
      if (!row) throw new AppError('not_found', `No customer with id ${id}.`);
      const before = toStored(row);
      const merged = { ...before, ...changes };
      const after: StoredCustomer = { ...merged, countryKey: countryKey(merged.country) };
      try {
        update.run({ ...after, now });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('conflict', `A customer with the email ${after.email} already exists.`);
        throw error;
      }
      if (after.name !== before.name || after.email !== before.email) {
        unindexText.run(id);
        indexText.run(id, searchText(after.name, after.email));
      }
      const delta = new StatsDelta();
      delta.add(before, -1);
      delta.add(after, 1);
      stats.apply(delta);
      const change: CustomerChange = { before, after };
      return { change, generation: bump() };
    }),

    /** Deletes one customer; throws `not_found`. */
    deleteOne: db.transaction((id: number) => {
      const row = byId.get(id);
      if (!row) throw new AppError('not_found', `No customer with id ${id}.`);
      const before = toStored(row);
      remove.run(id);
      unindexText.run(id);
      const delta = new StatsDelta();
      delta.add(before, -1);
      stats.apply(delta);
      const change: CustomerChange = { before, after: undefined };
      return { change, generation: bump() };
    }),
  };
}
