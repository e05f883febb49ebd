// The staging of a CSV import job on PostgreSQL: each batch of the parser is copied (COPY) into a temporary table on
// the job's own connection, then inserted into customers in chunks, each by one `INSERT ... SELECT ... ON CONFLICT`
// over a range of the staged rows, in the chunk's transaction. The triggers on customers keep the aggregates and the
// change log in that transaction; the insert's first statement trigger takes the customer writes' turn (the customers
// generation's row), held to the commit, so every other customer write waits from the insert to the commit: the
// caller sizes chunks for that (import-run.ts). Outcomes are those of SQLite's store/writes.ts: skipping, a stored
// email is taken; updating, a stored email has its fields replaced, unless this job stored or replaced that customer
// already (`seen`).
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { countryKey, type CustomerRecord } from '../../domain/customers.ts';
import type { PgSql } from '../../db/pg-engine.ts';
import { compiled, CUSTOMER_FIELDS, INSERT_COLUMNS, read } from '../store/fields.ts';
import type { CustomerIdSet, OnExisting } from '../store/writes.ts';

/**
 * What became of one record: a new customer, a stored one whose fields it replaced (or left as they were: an update
 * all the same, as on SQLite), a stored email it left alone (skipping), or an email an earlier record of the job
 * stored or replaced (updating).
 */
export type ChunkOutcome = 'inserted' | 'updated' | 'taken' | 'repeated';

/** A batch as staged: the outcomes known before any insert (repeats), and the stored customers' ids found by email. */
export interface StagedBatch {
  records: readonly CustomerRecord[];
  /** By record index: decided at staging (the record was not staged), else undefined. */
  decided: (ChunkOutcome | undefined)[];
  /** Updating: the id of the customer stored with the record's email when it was staged, by record index. */
  existing: Map<number, number>;
}

/** What a chunk did: each record's outcome in order, the customers it stored or replaced, and when its insert began. */
export interface ChunkResult {
  outcomes: ChunkOutcome[];
  /** Ids of the customers stored or replaced: the job's `seen` once the chunk has committed. */
  stored: number[];
  /** performance.now() as the insert began: from then on, other customer writes wait for this transaction. */
  insertedFrom: number;
}

/** The staged columns: every declared field's, then the country key (INSERT_COLUMNS without its time stamps). */
const STAGED = [...CUSTOMER_FIELDS.map((f) => f.column), 'country_key'];

// A temporary table belongs to its session: the job's connection creates it once, each batch empties it, and the job
// drops it at its end (IF NOT EXISTS: a job stopped before dropping it left it on that pooled connection). Temporary
// tables are not logged.
const CREATE_STAGING = `CREATE TEMPORARY TABLE IF NOT EXISTS import_job_staging (ord integer NOT NULL, ${CUSTOMER_FIELDS.map(
  (f) => `${f.column} ${f.sqlType === 'TEXT' ? 'text' : 'bigint'}`,
).join(', ')}, country_key text)`;
const COPY_STAGING = `COPY import_job_staging (ord, ${STAGED.join(', ')}) FROM STDIN`;
/** The staged rows of ords [$2, $3) into customers in their order (emails are unique among them), stamped $1. */
const INSERT_STAGED = `INSERT INTO customers ${INSERT_COLUMNS}
  SELECT ${STAGED.join(', ')}, $1::bigint, $1::bigint FROM import_job_staging WHERE ord >= $2 AND ord < $3 ORDER BY ord`;
const INSERT_NEW = `${INSERT_STAGED} ON CONFLICT (email) DO NOTHING RETURNING email`;
const REPLACED = [...CUSTOMER_FIELDS.filter((f) => f.key !== 'email').map((f) => f.column), 'country_key'];
// A stored customer whose fields are all the same is not rewritten (SQLite's sameFields): not returned, an update all
// the same. xmax = 0 tells a row this statement inserted from one it updated.
const UPSERT = `${INSERT_STAGED} ON CONFLICT (email) DO UPDATE SET ${REPLACED.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, updated_at = EXCLUDED.updated_at
  WHERE (${REPLACED.map((c) => `customers.${c}`).join(', ')}) IS DISTINCT FROM (${REPLACED.map((c) => `EXCLUDED.${c}`).join(', ')})
  RETURNING id, email, (xmax = 0) AS inserted`;

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
/** Returns text as a value of COPY's text format. */
export const escapeCopy = (text: string): string => text.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]!);

/** Returns the COPY line of a record at `ord`: its fields in STAGED's order, then its country key. */
const copyLine = compiled<(ord: number, r: CustomerRecord) => string>(
  'copyLine',
  ['ord', 'r'],
  `return ord + ${CUSTOMER_FIELDS.map((f) => `'\\t' + ${f.sqlType === 'TEXT' ? `escapeCopy(${read('r', f.key)})` : read('r', f.key)}`).join(' + ')} + '\\t' + escapeCopy(countryKey(r.country)) + '\\n';`,
  { escapeCopy, countryKey },
);

/** Creates the staging table on the job's connection `conn` unless it has it. */
export async function openStaging(conn: PgSql): Promise<void> {
  await conn.unsafe(CREATE_STAGING);
}

/** Drops the staging table of the job's connection, if any: the connection goes back to the pool without it. */
export async function closeStaging(conn: PgSql | undefined): Promise<void> {
  await conn?.unsafe('DROP TABLE IF EXISTS import_job_staging');
}

/**
 * Replaces the staged rows with the batch's records (checked, emails lower-cased; their index is their `ord`), outside
 * any transaction of customers. A record repeating an email earlier in the batch is decided here and not staged, so
 * each statement sees an email once; updating, so is one whose stored customer `seen` holds (an earlier batch's).
 */
export async function stageBatch(conn: PgSql, records: readonly CustomerRecord[], onExisting: OnExisting, seen?: CustomerIdSet): Promise<StagedBatch> {
  const decided: (ChunkOutcome | undefined)[] = new Array(records.length);
  const emails = new Set<string>();
  const ords: number[] = [];
  records.forEach((r, i) => {
    if (emails.has(r.email)) decided[i] = onExisting === 'update' ? 'repeated' : 'taken';
    else {
      emails.add(r.email);
      ords.push(i);
    }
  });
  await conn`TRUNCATE import_job_staging`;
  const pieces = function* () {
    for (let i = 0; i < ords.length; i += 500) yield ords.slice(i, i + 500).map((ord) => copyLine(ord, records[ord]!)).join('');
  };
  await pipeline(Readable.from(pieces()), await conn.unsafe(COPY_STAGING).writable());
  const existing = new Map<number, number>();
  if (onExisting === 'update') {
    for (const { ord, id } of await conn<{ ord: number; id: number }[]>`SELECT s.ord, c.id FROM import_job_staging s JOIN customers c ON c.email = s.email`) {
      existing.set(ord, id);
    }
    const repeats = [...existing].filter(([, id]) => seen?.has(id)).map(([ord]) => ord);
    for (const ord of repeats) decided[ord] = 'repeated';
    if (repeats.length > 0) await conn`DELETE FROM import_job_staging WHERE ord = ANY(${repeats}::int[])`;
  }
  return { records, decided, existing };
}

/**
 * Inserts the staged records [from, to) stamped `now` in the transaction `tx`, as `onExisting` says; resolves to their
 * outcomes. The caller adds `stored` to the job's `seen` once the transaction has committed. Rejects with what the
 * statement throws.
 */
export async function insertStaged(tx: PgSql, staged: StagedBatch, from: number, to: number, now: number, onExisting: OnExisting): Promise<ChunkResult> {
  const { records, decided, existing } = staged;
  // Filled below for every record not decided at staging.
  const outcomes = decided.slice(from, to) as ChunkOutcome[];
  const insertedFrom = performance.now();
  if (onExisting === 'skip') {
    const inserted = new Set((await tx.unsafe<{ email: string }[]>(INSERT_NEW, [now, from, to])).map((row) => row.email));
    for (let i = from; i < to; i++) outcomes[i - from] ??= inserted.has(records[i]!.email) ? 'inserted' : 'taken';
    return { outcomes, stored: [], insertedFrom };
  }
  const written = new Map<string, { id: number; inserted: boolean }>();
  for (const row of await tx.unsafe<{ id: number; email: string; inserted: boolean }[]>(UPSERT, [now, from, to])) written.set(row.email, row);
  const stored: number[] = [];
  for (let i = from; i < to; i++) {
    if (outcomes[i - from] !== undefined) continue;
    const row = written.get(records[i]!.email);
    // Not returned: a stored customer whose fields were already these (or one stored meanwhile by another write).
    const id = row?.id ?? existing.get(i);
    if (id !== undefined) stored.push(id);
    outcomes[i - from] = row?.inserted ? 'inserted' : 'updated';
  }
  return { outcomes, stored, insertedFrom };
}
