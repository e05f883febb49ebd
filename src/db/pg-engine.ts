// The seam (engine.ts) on PostgreSQL, through postgres.js: transactions on one pooled connection each, joined by what
// runs inside them through AsyncLocalStorage; NOTIFY and LISTEN (postgres.js reconnects its listening connection by
// itself); leaders through session advisory locks on one reserved connection. Unlike SQLite's, the work inside a
// transaction here is asynchronous: each statement is a round trip.
//
// Failover (product.md section 13): with a multi-host URL and target_session_attrs=read-write, connections find the
// primary by themselves (pg-sockets.ts); while none is reachable, what runs through `write`, `read` and `ping` fails
// within seconds with AppError `unavailable` (unavailable.ts), never waits for a primary to come back.
//
// Connections that close under their work (a failover, a session ended by the server) meet four faults of
// postgres.js 3.4, worked around here: a statement sent on a closed connection (a transaction's ROLLBACK, a reserved
// connection's next statement) throws from a timer, uncaught, so transactions and reserved connections send nothing
// once theirs has closed (`closedWith`); the first statement on a connection whose previous session the server ended
// fails with that session's error, so a transaction that fails so without starting begins again once; and on a
// multi-host URL a connection's first statement never settles when the connection dies under it, so the service's
// statements run in transactions (a BEGIN settles); and a connection whose socket failed is taken back only when
// Node reports it closed, a moment later, and a statement sent on it meanwhile is never answered, so nothing more is
// sent on one whose statement failed with its loss (`isConnectionLost`).
import { AsyncLocalStorage } from 'node:async_hooks';
import postgres from 'postgres';
import type { Engine, Leadership } from './engine.ts';
import { HostSockets } from './pg-sockets.ts';
import { classifyDatabaseError, databaseUnavailable, isConnectionLost } from './unavailable.ts';

/** A connection pool, or one of its transactions: what a PostgreSQL repository runs its statements on. */
export type PgSql = postgres.Sql | postgres.TransactionSql;

export interface PostgresEngineOptions {
  /** Connections in the pool. */
  max?: number;
  /** Told of a failure nobody awaits (a notification that could not be sent, a listener that could not listen). */
  onError?: (error: unknown) => void;
}

/**
 * BIGINT (int8, also what count(*) answers) read as a JavaScript number: the schema's BIGINTs are epoch
 * milliseconds, ids and counts, all far below 2^53, and the row mappers the SQLite repositories share expect numbers.
 */
const BIGINT_AS_NUMBER = { to: 20, from: [20], serialize: (value: number | bigint) => String(value), parse: (text: string) => Number(text) };

/**
 * Text parameters with NUL characters, which PostgreSQL's text cannot hold (it fails the statement, where SQLite
 * compares them): each NUL is sent as U+FFFD. No stored value holds either (every text the service stores is
 * checked free of control characters first), so a lookup of an id or a filter with a NUL finds nothing, as on SQLite,
 * instead of failing the request.
 */
const TEXT_WITHOUT_NUL = { to: 25, from: [25], serialize: (value: unknown) => String(value).replaceAll('\0', '\uFFFD'), parse: (text: string) => text };

/**
 * Seconds a connection attempt may take (postgres.js waits 30 by default): also how long an attempt waits once every
 * host has failed (pg-sockets.ts), so that a query waiting for a connection fails within it while no primary answers.
 */
const CONNECT_TIMEOUT_S = 2;

/**
 * Seconds postgres.js waits before connecting again after a connection was lost with an error: its default grows with
 * each loss up to 20 s, which after a failover would keep the pool away from the promoted primary that long.
 */
const reconnectDelay = (losses: number): number => Math.min(0.05 * 2 ** losses, 1);

/**
 * How long a transaction waits for a connection while no host is reachable before it answers `unavailable`: queued
 * behind others, it could otherwise wait for several attempts in turn, and a request must answer within 5 seconds.
 */
const WAIT_FOR_CONNECTION_MS = 4_000;

/**
 * `target_session_attrs=read-write` as postgres.js should read it. It skips a host whose `default_transaction_read_only`
 * is on, but since PostgreSQL 14 a hot standby reports that setting off (it is read only by being in recovery, which it
 * reports as `in_hot_standby`): postgres.js would settle on the standby, every write failing there. `primary` (not in
 * hot standby) is what it checks right; a primary set read only by default would still fail its writes, visibly.
 */
function sessionAttributes(url: string): { target_session_attrs?: 'primary' } {
  const query = url.includes('?') ? new URLSearchParams(url.slice(url.indexOf('?') + 1)) : undefined;
  return query?.get('target_session_attrs') === 'read-write' ? { target_session_attrs: 'primary' } : {};
}

/**
 * How long a transaction whose work failed with a connection's loss waits for its own connection to close before it
 * rolls back: the failure may be another connection's, and this one alive.
 */
const CLOSE_AFTER_SHUTDOWN_MS = 1_000;

/**
 * A transaction that failed this soon without starting, for a lost connection, may have failed for an earlier
 * session's end (that error comes at once): it begins again, once. In an outage that costs one connection attempt.
 */
const STALE_FAILURE_MS = 250;

/** A connection reserved by `PostgresEngine.reserve`. */
export interface ReservedConnection {
  /** Its statements; they throw CONNECTION_CLOSED once it has closed. */
  readonly sql: PgSql;
  /** Whether it has closed (the server ended its session, or its socket failed), or a statement on it failed so. */
  readonly lost: boolean;
  /**
   * Told of a failure of the work on it: one saying the connection is lost (`isConnectionLost`) makes it `lost` at
   * once, as its close may come a moment later (and it would be handed out again meanwhile).
   */
  failed(error: unknown): void;
  /** Gives it back to the pool, unless it is lost (the pool has it back already, or will at its close). */
  release(): void;
}

/** Whether a transaction's connection has closed under it (postgres.js then rejects the transaction at once). */
interface ConnectionWatch {
  closed: boolean;
  /** Settles true when the connection closes while the work runs (false once the transaction has ended otherwise). */
  closing: Promise<boolean>;
}

/** What a transaction's statements throw once its connection has closed: the same as postgres.js's own. */
function connectionClosedError(): Error {
  return Object.assign(new Error("The transaction's connection closed."), { code: 'CONNECTION_CLOSED' });
}

/** The properties of a transaction that send statements (besides calling it as a tagged template). */
const SENDING = new Set<PropertyKey>(['unsafe', 'file', 'savepoint']);

/**
 * The transaction `tx` as its work sees it: once its connection has closed, a statement the work sends throws
 * CONNECTION_CLOSED instead of going to postgres.js, which would write it on the closed connection from a timer and
 * throw there, uncaught (3.4). (Work awaiting something else when the connection closes sends its next one then.)
 */
function closedWith<S extends PgSql>(tx: S, connection: Pick<ConnectionWatch, 'closed'>): S {
  return new Proxy(tx, {
    apply(target, self, args) {
      if (connection.closed) throw connectionClosedError();
      return Reflect.apply(target, self, args);
    },
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function' || !SENDING.has(key)) return value;
      return (...args: unknown[]) => {
        if (connection.closed) throw connectionClosedError();
        return Reflect.apply(value, target, args);
      };
    },
  });
}

/** Thrown into a transaction that started after its caller had been answered `unavailable`: it rolls back. */
class Abandoned extends Error {}

interface OpenTransaction {
  tx: postgres.TransactionSql;
  notifications: [channel: string, payload: string][];
}

/** One PostgreSQL database. */
export class PostgresEngine implements Engine<PgSql> {
  readonly kind = 'postgres' as const;
  readonly sql: postgres.Sql;
  /**
   * One connection of its own, outside the pool, for session advisory locks (leaders, webhook delivery claims): they
   * are held as long as its session lives, and given up with it when the instance dies. postgres.js reconnects it
   * by itself; the locks of the lost session are then gone, which their holders check for.
   */
  private readonly lockSession: postgres.Sql;
  private readonly leaders: AdvisoryLeadership;
  /** The transaction the current work runs in, and the notifications it sends when its work has succeeded. */
  private readonly open = new AsyncLocalStorage<OpenTransaction>();
  private readonly onError: (error: unknown) => void;
  /** Listeners being stopped: closing waits for them, so that no UNLISTEN is sent on a closed connection. */
  private readonly stopping = new Set<Promise<void>>();
  private readonly sockets = new HostSockets();

  constructor(url: string, { max = 10, onError = () => {} }: PostgresEngineOptions = {}) {
    // Notices (such as "relation already exists, skipping") are not problems of the service. `socket` is an option
    // postgres.js reads but does not declare in its types; the LISTEN connection postgres.js makes inherits it.
    const socket = { socket: this.sockets.connect } as {};
    const common = { ...socket, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_S, backoff: reconnectDelay, ...sessionAttributes(url) };
    const types = { bigint: BIGINT_AS_NUMBER, text: TEXT_WITHOUT_NUL };
    this.sql = postgres(url, { max, ...common, idle_timeout: 60, connection: { application_name: 'campaigns' }, types });
    this.lockSession = postgres(url, { max: 1, ...common, connection: { application_name: 'campaigns locks' }, types });
    this.onError = onError;
    this.leaders = new AdvisoryLeadership((work) => this.onLockSession(work));
  }

  get leadership(): Leadership {
    return this.leaders;
  }

  /**
   * Runs `work` in one transaction (READ COMMITTED); inside another transaction of this engine, joins it. Throws
   * AppError `unavailable` when no primary is reachable.
   */
  async write<T>(work: (tx: PgSql) => T): Promise<Awaited<T>> {
    const open = this.open.getStore();
    if (open) return await work(open.tx);
    return this.begin('', work);
  }

  /** Runs `work` in a read-only REPEATABLE READ transaction: every statement of it sees one snapshot. Throws as `write`. */
  async read<T>(work: (tx: PgSql) => T): Promise<Awaited<T>> {
    const open = this.open.getStore();
    if (open) return await work(open.tx);
    return this.begin('isolation level repeatable read read only', work);
  }

  /**
   * Runs `work` in a new transaction of its own, even when called inside another (a change feed's catch-up, the
   * audience index's load: what they read must be what is committed). Throws as `write`.
   */
  transaction<T>(options: 'read only' | 'read write', work: (tx: PgSql) => T): Promise<Awaited<T>> {
    return this.begin(options === 'read only' ? 'isolation level repeatable read read only' : '', work, { joinable: false });
  }

  /**
   * Reserves one connection of the pool for work that spans transactions (an import job's staging table lives in its
   * session). Once that connection has closed, its statements throw CONNECTION_CLOSED (postgres.js 3.4 would send
   * them on the closed connection from a timer, and throw there, uncaught) and `release` leaves it to the pool, which
   * took it back already. Throws AppError `unavailable` when no primary is reachable.
   */
  async reserve(): Promise<ReservedConnection> {
    let conn: postgres.ReservedSql;
    try {
      conn = await this.sql.reserve();
    } catch (error) {
      throw classifyDatabaseError(error);
    }
    const watch = { closed: false };
    const failed = (error: unknown): void => {
      if (isConnectionLost(error)) watch.closed = true;
    };
    let connection: { onclose?: ((error: unknown) => void) | null } | undefined;
    // postgres.js tells the connection object a first statement runs on, and calls its `onclose` when it closes (as
    // its own transactions use it): that is how a reserved connection's end can be known.
    const onexecute = (c: typeof connection) => {
      connection = c;
      c!.onclose = () => (watch.closed = true);
      return true;
    };
    try {
      await conn.unsafe('SELECT 1', [], { onexecute } as never);
    } catch (error) {
      failed(error);
      if (!watch.closed) conn.release();
      throw classifyDatabaseError(error);
    }
    return {
      sql: closedWith(conn, watch),
      get lost() {
        return watch.closed;
      },
      failed,
      release() {
        if (watch.closed) return;
        if (connection) connection.onclose = null;
        conn.release();
      },
    };
  }

  /**
   * Runs `work` in a transaction of its own on the lock session (see `lockSession`): what holds or gives up session
   * advisory locks, and the lease, which must not wait behind a busy pool. Throws as `write`.
   */
  onLockSession<T>(work: (tx: PgSql) => T): Promise<Awaited<T>> {
    return this.begin('', work, { joinable: false, on: this.lockSession });
  }

  /**
   * Runs `work` in a new transaction. Waiting for a connection ends with `unavailable` after WAIT_FOR_CONNECTION_MS
   * when no host is reachable; the transaction, should it start later all the same, then rolls back at once: its
   * caller was told it failed. `on` is the pool (the lock session for `onLockSession`); work that is not
   * `joinable` runs outside every transaction's context.
   */
  private async begin<T>(options: string, work: (tx: PgSql) => T, { joinable = true, on = this.sql } = {}): Promise<Awaited<T>> {
    const since = performance.now();
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.beginOnce(options, work, joinable, on);
      if (outcome.ok) return outcome.value;
      // A connection's first statement after the server ended its previous session is failed with that session's
      // error at once (postgres.js 3.4 keeps it): nothing of the work ran, so it begins again, once, on a new one.
      const stale = !outcome.started && isConnectionLost(outcome.error) && performance.now() - since < STALE_FAILURE_MS;
      if (attempt > 1 || !stale) throw classifyDatabaseError(outcome.error);
    }
  }

  /** One attempt of `begin`: its outcome, and whether the work started (then it must not run again). */
  private async beginOnce<T>(options: string, work: (tx: PgSql) => T, joinable: boolean, on: postgres.Sql): Promise<{ ok: true; value: Awaited<T> } | { ok: false; error: unknown; started: boolean }> {
    let started = false;
    let abandoned = false;
    let timer: NodeJS.Timeout | undefined;
    const transaction = on.begin(options, (tx) => {
      started = true;
      if (abandoned) throw new Abandoned('the caller was answered unavailable');
      return this.inTransaction(tx, work, connection, joinable);
    }) as Promise<Awaited<T>>;
    // While `work` runs, postgres.js settles the transaction only when its connection closes.
    const connection: ConnectionWatch = { closed: false, closing: transaction.then(() => false, () => true) };
    void connection.closing.then((closed) => (connection.closed = closed));
    const waited = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (started || this.sockets.reachable) return; // connected, or a busy pool: the wait is not an outage's
        abandoned = true;
        reject(databaseUnavailable());
      }, WAIT_FOR_CONNECTION_MS);
    });
    try {
      return { ok: true, value: await Promise.race([transaction, waited]) };
    } catch (error) {
      return { ok: false, error, started: started || abandoned };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs the work of a transaction, then sends its notifications: only work that succeeded sends, before COMMIT.
   *
   * Once the transaction's connection has closed under it, the work never settles: postgres.js would send its COMMIT
   * or ROLLBACK on that closed connection, which (in 3.4) throws from a timer, uncaught, and ends the process. The
   * caller has the connection's error already (postgres.js rejects the transaction when its connection closes), and
   * the server ended the transaction with the session.
   */
  private async inTransaction<T>(sql: postgres.TransactionSql, work: (tx: PgSql) => T, connection: ConnectionWatch, joinable: boolean): Promise<Awaited<T>> {
    const tx = closedWith(sql, connection);
    const open: OpenTransaction = { tx, notifications: [] };
    let result: Awaited<T>;
    try {
      // Work that is not joinable runs outside every transaction's context: what it starts is not part of it.
      result = await (joinable ? this.open.run(open, () => work(tx)) : this.open.exit(() => work(tx)));
      for (const [channel, payload] of open.notifications) await tx`SELECT pg_notify(${channel}, ${payload})`;
    } catch (error) {
      // A lost connection closes within the same turn as its query's failure; a server shutting down the session
      // says so (57P01) a moment before it closes. The failure may also be another connection's, this one alive.
      let timer: NodeJS.Timeout | undefined;
      const notYet = new Promise<false>((resolve) => (timer = setTimeout(resolve, isConnectionLost(error) ? CLOSE_AFTER_SHUTDOWN_MS : 0, false)));
      const closed = await Promise.race([connection.closing, notYet]);
      clearTimeout(timer);
      if (closed) return new Promise<never>(() => {});
      throw error;
    }
    if (connection.closed) return new Promise<never>(() => {});
    return result;
  }

  /** Sent with the transaction under way (PostgreSQL delivers it at commit, and drops it on rollback), else at once. */
  notify(channel: string, payload: string): void {
    const open = this.open.getStore();
    if (open) open.notifications.push([channel, payload]);
    else this.sql.notify(channel, payload).catch(this.onError);
  }

  listen(channel: string, onMessage: (payload: string) => void, onListening?: () => void): () => void {
    const listening = this.sql.listen(channel, onMessage, onListening);
    listening.catch(this.onError);
    return () => {
      const stopped = listening.then((l) => l.unlisten()).catch(() => {});
      this.stopping.add(stopped);
      void stopped.finally(() => this.stopping.delete(stopped));
    };
  }

  /** Resolves when a primary answers; throws AppError `unavailable` when none is reachable, or the server is a standby. */
  async ping(): Promise<void> {
    const recovering = await this.read(async (tx) => (await tx<{ standby: boolean }[]>`SELECT pg_is_in_recovery() AS standby`)[0]!.standby);
    if (recovering) throw databaseUnavailable(new Error('connected to a standby: it takes no writes'));
  }

  async close(): Promise<void> {
    await Promise.all(this.stopping);
    await Promise.all([this.lockSession.end({ timeout: 5 }), this.sql.end({ timeout: 5 })]);
  }
}

/** The first key of this service's advisory locks (the second is the hash of a loop's name): "ca", for campaigns. */
const LOCK_SPACE = 0x6361;

/**
 * Leaders through session advisory locks on the engine's lock session: a lock is held as long as that session lives,
 * so a leader whose process dies, or whose connection is cut, is replaced by the next instance that asks. Asking
 * again looks at the server, not at a memory of having led: after a reconnection the lock may be another's.
 */
class AdvisoryLeadership implements Leadership {
  constructor(private readonly onSession: <T>(work: (tx: PgSql) => T) => Promise<Awaited<T>>) {}

  async tryLead(name: string): Promise<boolean> {
    const [row] = await this.onSession((tx) => tx<{ leads: boolean }[]>`
      SELECT CASE WHEN EXISTS (
          SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
            AND classid = ${LOCK_SPACE}::int::oid AND objid = hashtext(${name})::oid AND objsubid = 2)
        THEN true ELSE pg_try_advisory_lock(${LOCK_SPACE}, hashtext(${name})) END AS leads`);
    return Boolean(row?.leads);
  }

  async resign(name: string): Promise<void> {
    await this.onSession((tx) => tx`SELECT pg_advisory_unlock(${LOCK_SPACE}, hashtext(${name}))`);
  }
}
