// The seam (engine.ts) on PostgreSQL, through postgres.js: transactions on one pooled connection each, joined by what
// runs inside them through AsyncLocalStorage; NOTIFY and LISTEN (postgres.js reconnects its listening connection by
// itself); leaders through session advisory locks on one reserved connection. Unlike SQLite's, the work inside a
// transaction here is asynchronous: each statement is a round trip.
import { AsyncLocalStorage } from 'node:async_hooks';
import net from 'node:net';
import postgres from 'postgres';
import type { Engine, Leadership } from './engine.ts';

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
 * The sockets of postgres.js's connections, with Nagle's algorithm off: postgres.js connects plain sockets, which
 * hold a small write (a transaction's COMMIT, a COPY's end) until the server acknowledges the previous one, and the
 * server delays that acknowledgement: a two-statement transaction took 1.5 ms instead of 0.6, a COPY 50-90 ms
 * however few its rows. Given `socket`, postgres.js no longer picks the host itself: each new connection here takes
 * the next host of a multi-host URL, as postgres.js would (it asks again when a host refuses or is not read-write).
 */
function socketsWithoutDelay() {
  let next = 0;
  return ({ host, port, path }: { host: string[]; port: number[]; path?: string | false }): net.Socket => {
    if (path) return net.connect({ path });
    const i = next++ % host.length;
    return net.connect({ host: host[i], port: port[i] ?? port[0]!, noDelay: true });
  };
}

/**
 * Text parameters with NUL characters, which PostgreSQL's text cannot hold (it fails the statement, where SQLite
 * compares them): each NUL is sent as U+FFFD. No stored value holds either (every text the service stores is
 * checked free of control characters first), so a lookup of an id or a filter with a NUL finds nothing, as on SQLite,
 * instead of failing the request.
 */
const TEXT_WITHOUT_NUL = { to: 25, from: [25], serialize: (value: unknown) => String(value).replaceAll('\0', '\uFFFD'), parse: (text: string) => text };

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
  readonly lockSession: postgres.Sql;
  private readonly leaders: AdvisoryLeadership;
  /** The transaction the current work runs in, and the notifications it sends when its work has succeeded. */
  private readonly open = new AsyncLocalStorage<OpenTransaction>();
  private readonly onError: (error: unknown) => void;
  /** Listeners being stopped: closing waits for them, so that no UNLISTEN is sent on a closed connection. */
  private readonly stopping = new Set<Promise<void>>();

  constructor(url: string, { max = 10, onError = () => {} }: PostgresEngineOptions = {}) {
    // Notices (such as "relation already exists, skipping") are not problems of the service. `socket` is an option
    // postgres.js reads but does not declare in its types.
    const socket = { socket: socketsWithoutDelay() } as {};
    const types = { bigint: BIGINT_AS_NUMBER, text: TEXT_WITHOUT_NUL };
    this.sql = postgres(url, { max, ...socket, onnotice: () => {}, idle_timeout: 60, connection: { application_name: 'campaigns' }, types });
    this.lockSession = postgres(url, { max: 1, ...socket, onnotice: () => {}, connection: { application_name: 'campaigns locks' }, types });
    this.onError = onError;
    this.leaders = new AdvisoryLeadership(this.lockSession);
  }

  get leadership(): Leadership {
    return this.leaders;
  }

  /** Runs `work` in one transaction (READ COMMITTED); inside another transaction of this engine, joins it. */
  async write<T>(work: (tx: PgSql) => T): Promise<Awaited<T>> {
    const open = this.open.getStore();
    if (open) return await work(open.tx);
    return (await this.sql.begin((tx) => this.inTransaction(tx, work))) as Awaited<T>;
  }

  /** Runs `work` in a read-only REPEATABLE READ transaction: every statement of it sees one snapshot. */
  async read<T>(work: (tx: PgSql) => T): Promise<Awaited<T>> {
    const open = this.open.getStore();
    if (open) return await work(open.tx);
    return (await this.sql.begin('isolation level repeatable read read only', (tx) => this.inTransaction(tx, work))) as Awaited<T>;
  }

  /** Runs the work of a transaction, then sends its notifications: only work that succeeded sends, before COMMIT. */
  private async inTransaction<T>(tx: postgres.TransactionSql, work: (tx: PgSql) => T): Promise<Awaited<T>> {
    const open: OpenTransaction = { tx, notifications: [] };
    const result = await this.open.run(open, () => work(tx));
    for (const [channel, payload] of open.notifications) await tx`SELECT pg_notify(${channel}, ${payload})`;
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

  async ping(): Promise<void> {
    await this.sql`SELECT 1`;
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
  constructor(private readonly session: postgres.Sql) {}

  async tryLead(name: string): Promise<boolean> {
    const [row] = await this.session<{ leads: boolean }[]>`
      SELECT CASE WHEN EXISTS (
          SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
            AND classid = ${LOCK_SPACE}::int::oid AND objid = hashtext(${name})::oid AND objsubid = 2)
        THEN true ELSE pg_try_advisory_lock(${LOCK_SPACE}, hashtext(${name})) END AS leads`;
    return Boolean(row?.leads);
  }

  async resign(name: string): Promise<void> {
    await this.session`SELECT pg_advisory_unlock(${LOCK_SPACE}, hashtext(${name}))`;
  }
}
