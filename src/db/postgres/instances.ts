// This process as one instance of the service among several on one PostgreSQL database: a row in service_instances
// whose lease it renews on a heartbeat. Whatever an instance claims for a while (an idempotency key, a reply stream's
// slot, an import job, a confirm under way) names its id; the others treat the claim as abandoned once that id's
// lease has ended (`campaigns_instance_alive` in schema.sql), which is how a killed instance's claims expire.
import { randomUUID } from 'node:crypto';
import type { PgSql, PostgresEngine } from '../pg-engine.ts';

/** This instance: its id, and how it stops renewing its lease. */
export interface Instance {
  /** A UUID made at this start: the owner every claim of this process names. */
  readonly id: string;
  /** Settles once the first lease is written: claims made before would look abandoned to the others. */
  readonly ready: Promise<void>;
  /** Stops the heartbeat and deletes this instance's row: what it still holds passes on at once. */
  stop(): Promise<void>;
}

export interface InstanceOptions {
  /** How long after a renewal the lease runs. */
  leaseMs: number;
  /** How often the lease is renewed. */
  heartbeatMs: number;
  /** Told when a renewal fails (the database unreachable); the heartbeat goes on trying. */
  onError: (error: unknown) => void;
}

/** Rows of instances gone this long are removed: their claims were passed on long before. */
const SWEEP_AFTER_MS = 3_600_000;

/**
 * Renews for `leaseMs` the leases that ran out within the last `outageMs` (and only those): after an outage of the
 * database, their instances could not renew either.
 */
export async function renewLapsedDuring(sql: PgSql, outageMs: number, leaseMs: number): Promise<void> {
  await sql`
    UPDATE service_instances SET expires_at = campaigns_now_ms() + ${leaseMs}
    WHERE expires_at >= campaigns_now_ms() - ${outageMs} AND expires_at < campaigns_now_ms() + ${leaseMs}`;
}

/** While renewals fail, they are tried again this often (at most): the lease must be back soon after the database is. */
const RETRY_MS = 250;

/**
 * Registers this process as an instance and keeps its lease alive until `stop`. Renewals go through the engine's
 * lock session (one connection of its own), so a busy pool cannot delay them past the lease.
 *
 * After an outage of the database (a failover) every lease may have run out at once, though every instance is alive:
 * the first renewal that succeeds after failures also renews the leases that ran out during the outage, so that
 * instances returning a moment apart do not take each other for dead. (An instance killed during the outage is then
 * taken for gone one lease later.)
 */
export function registerInstance(engine: PostgresEngine, { leaseMs, heartbeatMs, onError }: InstanceOptions): Instance {
  const id = randomUUID();
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> = Promise.resolve();
  let stopped = false;
  /** When renewals began to fail (performance.now()), until one succeeds: an outage is reported once, not per heartbeat. */
  let failingSince: number | undefined;

  /** Writes the lease (again, should another instance have swept this row while this one was cut off). */
  const renew = (): Promise<void> =>
    engine.onLockSession(async (sql) => {
      await sql`
        INSERT INTO service_instances (id, started_at, expires_at) VALUES (${id}, campaigns_now_ms(), campaigns_now_ms() + ${leaseMs})
        ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at`;
      if (failingSince !== undefined) await renewLapsedDuring(sql, Math.ceil(performance.now() - failingSince) + heartbeatMs, leaseMs);
      await sql`DELETE FROM service_instances WHERE expires_at < campaigns_now_ms() - ${SWEEP_AFTER_MS}`;
    });

  const schedule = (): void => {
    if (!stopped) timer = setTimeout(beat, failingSince === undefined ? heartbeatMs : Math.min(heartbeatMs, RETRY_MS)).unref();
  };

  const beat = (): void => {
    beating = renew().then(
      () => {
        failingSince = undefined;
      },
      (error: unknown) => {
        if (failingSince === undefined) {
          onError(error);
          failingSince = performance.now();
        }
      },
    );
    void beating.then(schedule);
  };

  const ready = renew();
  void ready.then(schedule, () => {});

  return {
    id,
    ready,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await beating;
      await engine.onLockSession((sql) => sql`DELETE FROM service_instances WHERE id = ${id}`).catch(onError);
    },
  };
}
