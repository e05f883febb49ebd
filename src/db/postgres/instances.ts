// This process as one instance of the service among several on one PostgreSQL database: a row in service_instances
// whose lease it renews on a heartbeat. Whatever an instance claims for a while (an idempotency key, a reply stream's
// slot, an import job, a confirm under way) names its id; the others treat the claim as abandoned once that id's
// lease has ended (`campaigns_instance_alive` in schema.sql), which is how a killed instance's claims expire.
import { randomUUID } from 'node:crypto';
import type { PostgresEngine } from '../pg-engine.ts';

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

/** Registers this process as an instance and keeps its lease alive until `stop`. */
export function registerInstance(engine: PostgresEngine, { leaseMs, heartbeatMs, onError }: InstanceOptions): Instance {
  const id = randomUUID();
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> = Promise.resolve();
  let stopped = false;
  /** A failure is reported once, until a renewal succeeds again: an outage is one event, not one per heartbeat. */
  let failing = false;

  /** Writes the lease (again, should another instance have swept this row while this one was cut off). */
  const renew = async (): Promise<void> => {
    await engine.sql`
      INSERT INTO service_instances (id, started_at, expires_at) VALUES (${id}, campaigns_now_ms(), campaigns_now_ms() + ${leaseMs})
      ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at`;
    await engine.sql`DELETE FROM service_instances WHERE expires_at < campaigns_now_ms() - ${SWEEP_AFTER_MS}`;
  };

  const beat = (): void => {
    beating = renew().then(
      () => {
        failing = false;
      },
      (error: unknown) => {
        if (!failing) onError(error);
        failing = true;
      },
    );
    void beating.then(() => {
      if (!stopped) timer = setTimeout(beat, heartbeatMs).unref();
    });
  };

  const ready = renew();
  void ready.then(
    () => {
      if (!stopped) timer = setTimeout(beat, heartbeatMs).unref();
    },
    () => {},
  );

  return {
    id,
    ready,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await beating;
      await engine.sql`DELETE FROM service_instances WHERE id = ${id}`.catch(onError);
    },
  };
}
