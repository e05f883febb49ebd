// The one module that opens the database: pragmas, then upgrades, then schema.sql.
//
// Conventions of every repository in src/db/: `createXRepository(db)` prepares its statements once; `findX(id)`
// returns the row or `undefined`, `getX(id)` returns it or throws AppError `not_found`; writes that belong together
// run in one `db.transaction()`, and nothing inside a transaction awaits. Repositories know no HTTP.
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

export type Db = Database.Database;

/**
 * Write turns: how the service's connection and the import writer thread of the same process share SQLite's one
 * write lock. A job's transactions on the writer run for up to half a second (fewer, larger transactions write each
 * index page once for more rows), so a write of the service must not wait for one to end: every write transaction
 * and writing statement of the service's connection first says it wants the lock (`WANTED`, counted), and if the
 * writer is in such a transaction (`HELD`) waits for it to commit (`writeTurn` waits without blocking the event
 * loop). The writer checks `WANTED` between rows, commits soon after (see imports/csv-job.ts WAIT_BUDGET_MS), then
 * lets the waiting writes go first. Both threads see one SharedArrayBuffer; nothing here is SQL.
 */
const WANTED = 0;
const HELD = 1;
/** Import requests (JSON imports) posted to the writer thread and not yet taken from its queue. */
const QUEUED = 2;
/** The longest a write of the service waits for the writer's transaction before going to SQLite's busy handler. */
const TURN_WAIT_MS = 5000;

const turnsOf = new WeakMap<Db, SharedArrayBuffer>();

/** Returns the write turns of a connection `openDatabase` opened (for the import writer thread); none in memory. */
export function writeTurnsOf(db: Db): SharedArrayBuffer | undefined {
  return turnsOf.get(db);
}

/** The import writer's side of the write turns (see WANTED and HELD above). */
export class WriteTurns {
  private readonly cells: Int32Array;

  constructor(shared: SharedArrayBuffer) {
    this.cells = new Int32Array(shared);
  }

  /** Whether a write of the service is waiting for the lock (or holds it) now. */
  wanted(): boolean {
    return Atomics.load(this.cells, WANTED) > 0;
  }

  /** Whether import requests wait in the writer's queue (posted, not yet taken): a job's transaction lets them in. */
  importsQueued(): boolean {
    return Atomics.load(this.cells, QUEUED) > 0;
  }

  /** The service's side: an import request is being posted to the writer. */
  importPosted(): void {
    Atomics.add(this.cells, QUEUED, 1);
  }

  /** The writer's side: an import request was taken from the queue. */
  importTaken(): void {
    Atomics.sub(this.cells, QUEUED, 1);
  }

  /** The service's side: the writer thread is gone, and the requests it had not taken with it. */
  writerGone(): void {
    Atomics.store(this.cells, QUEUED, 0);
    this.release();
  }

  /**
   * Marks the start of a transaction that gives way when asked; waits first while writes of the service want the
   * lock, for up to `patienceMs` in all (then starts anyway: those writes wait at most one transaction).
   */
  hold(patienceMs: number): void {
    const until = performance.now() + patienceMs;
    for (;;) {
      for (let wanted = Atomics.load(this.cells, WANTED); wanted > 0; wanted = Atomics.load(this.cells, WANTED)) {
        const left = until - performance.now();
        if (left <= 0) break;
        Atomics.wait(this.cells, WANTED, wanted, left);
      }
      Atomics.store(this.cells, HELD, 1);
      // A write of the service that counted itself after the loop above saw HELD at 0 and goes ahead: let it.
      if (!this.wanted() || performance.now() >= until) return;
      this.release();
    }
  }

  /** Marks the transaction's end (committed or rolled back) and wakes the writes of the service waiting for it. */
  release(): void {
    Atomics.store(this.cells, HELD, 0);
    Atomics.notify(this.cells, HELD);
  }
}

type WaitAsync = (cells: Int32Array, index: number, value: number, timeout: number) => { async: false; value: string } | { async: true; value: Promise<string> };

/**
 * Resolves once a write of `db` may run without waiting for a transaction of the import writer, which it has asked to
 * commit; the event loop serves other requests meanwhile. Returns the function to call once the write has run (until
 * then the writer lets it go first). A connection without write turns resolves at once.
 */
export async function writeTurn(db: Db): Promise<() => void> {
  const shared = turnsOf.get(db);
  if (!shared) return () => {};
  const cells = new Int32Array(shared);
  Atomics.add(cells, WANTED, 1);
  let done = false;
  const release = () => {
    if (done) return;
    done = true;
    Atomics.sub(cells, WANTED, 1);
    Atomics.notify(cells, WANTED);
  };
  try {
    const waited = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync(cells, HELD, 1, TURN_WAIT_MS);
    if (waited.async) await waited.value;
  } catch (error) {
    release();
    throw error;
  }
  return release;
}

/**
 * Makes every write of `db` outside a transaction take its turn: counted in WANTED while it runs, after waiting for
 * a transaction of the import writer marked HELD to commit. Reads (read-only statements) are left as they are.
 */
function takeTurns(db: Db, shared: SharedArrayBuffer): void {
  const cells = new Int32Array(shared);
  const inTurn = <F extends (...args: never[]) => unknown>(run: F): F =>
    function (this: unknown, ...args: Parameters<F>) {
      if (db.inTransaction) return run.apply(this, args);
      Atomics.add(cells, WANTED, 1);
      try {
        if (Atomics.load(cells, HELD) === 1) Atomics.wait(cells, HELD, 1, TURN_WAIT_MS);
        return run.apply(this, args);
      } finally {
        Atomics.sub(cells, WANTED, 1);
        Atomics.notify(cells, WANTED);
      }
    } as F;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: never[]) => unknown) => {
    const plain = transaction(fn);
    return Object.assign(inTurn(plain), {
      default: inTurn(plain.default),
      deferred: inTurn(plain.deferred),
      immediate: inTurn(plain.immediate),
      exclusive: inTurn(plain.exclusive),
      database: db,
    });
  }) as Db['transaction'];
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    if (!statement.readonly) {
      statement.run = inTurn(statement.run);
      statement.get = inTurn(statement.get);
      statement.all = inTurn(statement.all);
    }
    return statement;
  }) as Db['prepare'];
  db.exec = inTurn(db.exec);
}

/** The schema version this release writes; `PRAGMA user_version` holds the version of a database. */
export const SCHEMA_VERSION = 8;

/**
 * Steps that bring a database from version N to N + 1, for changes `CREATE ... IF NOT EXISTS`
 * in schema.sql cannot make by itself (new columns, rewritten data). New tables and indexes need no step.
 */
const UPGRADES: Record<number, (db: Db) => void> = {
  // 3 -> 4: an assistant reply cut at the token budget is marked. Older databases get the table from schema.sql.
  3: (db) => addColumn(db, 'chat_messages', 'truncated', 'INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1))'),
  // 4 -> 5: approval freezes the campaign's audience.
  4: (db) => {
    addColumn(db, 'campaigns', 'audience_conditions', 'TEXT CHECK (audience_conditions IS NULL OR json_valid(audience_conditions))');
    addColumn(db, 'campaigns', 'audience_description', 'TEXT');
    addColumn(db, 'campaigns', 'audience_size', 'INTEGER CHECK (audience_size IS NULL OR audience_size >= 0)');
    addColumn(db, 'campaigns', 'approved_at', 'INTEGER');
  },
  // 7 -> 8: an import job may update stored customers, and counts them.
  7: (db) => {
    addColumn(db, 'import_jobs', 'updated', 'INTEGER NOT NULL DEFAULT 0');
    addColumn(db, 'import_jobs', 'on_existing', "TEXT NOT NULL DEFAULT 'skip' CHECK (on_existing IN ('skip', 'update'))");
  },
};

/** Adds a column to a table that exists without it; a table still to be created by schema.sql is left to it. */
function addColumn(db: Db, table: string, column: string, definition: string): void {
  const columns = db.pragma(`table_info(${table})`) as { name: string }[];
  if (columns.length > 0 && !columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
}

/** schema.sql, read when a database is first opened (threads that only open second connections never read it). */
let schemaSql: string | undefined;
const SCHEMA_URL = new URL('../../schema.sql', import.meta.url);

/** Returns an open database at `path` (its folder is created), upgraded to the current schema. */
export function openDatabase(path: string, { cacheMiB = 64 } = {}): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // Readers never block the writer and the writer never blocks readers; the CLI can write while the server runs.
  db.pragma('journal_mode = WAL');
  configure(db, cacheMiB * 1024);
  if (!db.memory) {
    const shared = new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
    turnsOf.set(db, shared);
    takeTurns(db, shared);
  }
  try {
    migrate(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * Returns a second read-write connection to the database that `openDatabase` opened at `path` (not upgraded again),
 * for a thread that writes large batches: a page cache of `cacheMiB` MiB, so the customer indexes stay in memory
 * between its transactions.
 */
export function openWriterConnection(path: string, cacheMiB: number): Db {
  const db = new Database(path, { fileMustExist: true });
  configure(db, cacheMiB * 1024);
  return db;
}

/** Returns a read-only connection to the file of `db`, for reading one snapshot over many steps; throws when it is gone. */
export function openReadConnection(db: Db): Db {
  if (db.memory) throw new Error('An in-memory database has no second connection.');
  return new Database(db.name, { readonly: true, fileMustExist: true });
}

function configure(db: Db, cacheKiB: number): void {
  // With WAL, NORMAL loses no committed data on a process crash and fsyncs far less often.
  db.pragma('synchronous = NORMAL');
  // Declared REFERENCES are enforced (SQLite leaves them off by default).
  db.pragma('foreign_keys = ON');
  db.pragma(`cache_size = -${cacheKiB}`);
  // Another process holding the write lock (the user CLI, a backup) makes us wait, not fail.
  db.pragma('busy_timeout = 5000');
}

/**
 * Steps that fill a table schema.sql has just created from what a database of version N held, run after schema.sql
 * when a database of version N or older is upgraded.
 */
const BACKFILLS: Record<number, (db: Db) => void> = {
  // 5 -> 6: each existing campaign's copy becomes its version 1, as generated.
  5: (db) =>
    db.exec(
      `INSERT OR IGNORE INTO campaign_versions (campaign_id, version, title, message, call_to_action, source, model, created_by, created_at)
       SELECT id, 1, title, message, call_to_action, 'generated', model, created_by, created_at FROM campaigns`,
    ),
};

function migrate(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new Error(`The database has schema version ${version}; this release knows up to ${SCHEMA_VERSION}. Upgrade the service.`);
  }
  db.transaction(() => {
    for (let from = version; from > 0 && from < SCHEMA_VERSION; from++) UPGRADES[from]?.(db);
    db.exec((schemaSql ??= readFileSync(SCHEMA_URL, 'utf8')));
    for (let from = version; from > 0 && from < SCHEMA_VERSION; from++) BACKFILLS[from]?.(db);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

/** Returns whether a better-sqlite3 error is a UNIQUE or PRIMARY KEY violation. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
