// The seam between the data layer and a database engine: how a repository runs its statements and transactions, and
// the few engine services that several instances of the service will need (notifications, a leader lock).
//
// Conventions of every repository (src/db/*, src/customers/): `createXRepository(engine)` prepares its statements
// once and returns an object whose functions are asynchronous (they return promises); `findX(id)` resolves to the
// row or `undefined`, `getX(id)` to it or rejects with AppError `not_found`. Writes that belong together run in one
// `engine.write(tx => ...)`; on SQLite the work inside is synchronous and must not await (a promise returned from it
// is refused). Work that must commit with a transaction of another repository (a webhook event with a campaign's
// move) is a synchronous function taking that `tx`: it joins the transaction it is given. Repositories know no HTTP.
//
// SQLite implements it here; pg-engine.ts implements it on PostgreSQL with postgres.js (`write` as BEGIN ... COMMIT on
// one pooled connection, `notify`/`listen` as NOTIFY/LISTEN, `leadership` as advisory locks on a reserved connection).
import { openDatabase, type Db } from './database.ts';
import { WriteGate } from './write-gate.ts';

/** Which instance runs a loop that must run once in a deployment (the webhook dispatcher, the import runner). */
export interface Leadership {
  /** Resolves to whether this instance leads `name` now: true when it already did or has just become the leader. */
  tryLead(name: string): Promise<boolean>;
  /** Gives up leading `name`; another instance may take it. */
  resign(name: string): Promise<void>;
}

/** The database as repositories see it. `Tx` is the engine's transaction handle. */
export interface Engine<Tx = unknown> {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Runs `work` as one write transaction and resolves to what it returns, or rejects with what it threw (nothing
   * of it committed). Called while a transaction of this engine is open, `work` joins it.
   */
  write<T>(work: (tx: Tx) => T): Promise<Awaited<T>>;
  /** Runs `work` over one consistent snapshot of the database. */
  read<T>(work: (tx: Tx) => T): Promise<Awaited<T>>;
  /** Tells every listener of `channel` (on PostgreSQL, in every instance) once the current transaction commits. */
  notify(channel: string, payload: string): void;
  /**
   * Calls `onMessage` for each notification on `channel`; returns the function that stops listening. `onListening`
   * is called once notifications are heard (on PostgreSQL, when the server has acknowledged LISTEN, and again after
   * each reconnection: notifications sent while disconnected are lost, so a listener catches up then).
   */
  listen(channel: string, onMessage: (payload: string) => void, onListening?: () => void): () => void;
  readonly leadership: Leadership;
  /** Resolves when the database answers a trivial query; rejects when it does not. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Leadership within one process: on SQLite only one service process runs the loops (the CLI runs none). */
export class LocalLeadership implements Leadership {
  private readonly self = Symbol('instance');

  /** `leaders` (name to the instance that leads it) is shared by `sibling()`s. */
  constructor(private readonly leaders = new Map<string, symbol>()) {}

  async tryLead(name: string): Promise<boolean> {
    if (!this.leaders.has(name)) this.leaders.set(name, this.self);
    return this.leaders.get(name) === this.self;
  }

  async resign(name: string): Promise<void> {
    if (this.leaders.get(name) === this.self) this.leaders.delete(name);
  }

  /** Another instance over the same leaders: what a second instance would see (for tests of loops that run once). */
  sibling(): LocalLeadership {
    return new LocalLeadership(this.leaders);
  }
}

/** One SQLite database: its connection, and the gate that gives the service's writes their turn (write-gate.ts). */
export class SqliteEngine implements Engine<Db> {
  readonly kind = 'sqlite' as const;
  readonly leadership: LocalLeadership = new LocalLeadership();
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private readonly selectOne;

  constructor(
    readonly db: Db,
    readonly gate: WriteGate = new WriteGate(),
  ) {
    this.selectOne = db.prepare('SELECT 1');
  }

  async write<T>(work: (tx: Db) => T): Promise<Awaited<T>> {
    if (this.db.inTransaction) return refuseAwait(work(this.db));
    const done = await this.gate.turn();
    try {
      return this.db.transaction(() => refuseAwait(work(this.db))).immediate();
    } finally {
      done();
    }
  }

  async read<T>(work: (tx: Db) => T): Promise<Awaited<T>> {
    if (this.db.inTransaction) return refuseAwait(work(this.db));
    return this.db.transaction(() => refuseAwait(work(this.db))).deferred();
  }

  /** Delivered in this process once the synchronous work under way (and so its transaction) has ended. */
  notify(channel: string, payload: string): void {
    const listeners = this.listeners.get(channel);
    if (!listeners) return;
    queueMicrotask(() => {
      for (const listener of listeners) listener(payload);
    });
  }

  listen(channel: string, onMessage: (payload: string) => void, onListening?: () => void): () => void {
    let listeners = this.listeners.get(channel);
    if (!listeners) this.listeners.set(channel, (listeners = new Set()));
    listeners.add(onMessage);
    if (onListening) queueMicrotask(onListening);
    return () => listeners.delete(onMessage);
  }

  async ping(): Promise<void> {
    this.selectOne.get();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

/** Returns the SQLite engine on the database at `path`, opened and upgraded (database.ts). */
export function openSqliteEngine(path: string, options?: { cacheMiB?: number }): SqliteEngine {
  return new SqliteEngine(openDatabase(path, options));
}

/** SQLite's transactions are synchronous: work that returns a promise would commit before the promise settles. */
function refuseAwait<T>(result: T): Awaited<T> {
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    throw new Error('Work inside a SQLite transaction must be synchronous; it returned a promise.');
  }
  return result as Awaited<T>;
}
