// Waiting on CSV import jobs on PostgreSQL by events, not sleeps: a trigger a test adds to its own database notifies
// each commit that changes a job, and the test reads the job again then.
import type { PostgresEngine } from '../../src/db/pg-engine.ts';

/** The channel the trigger of `notifyJobChanges` notifies, with the job's id. */
const CHANNEL = 'test_import_jobs';

/** Adds to the database of `engine` the trigger that tells CHANNEL the id of every job a commit inserts or changes. */
export async function notifyJobChanges(engine: PostgresEngine): Promise<void> {
  // The test's instrument, not the service's.
  await engine.sql.unsafe(`
    CREATE FUNCTION test_job_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_notify('${CHANNEL}', NEW.id); RETURN NULL; END $$;
    CREATE TRIGGER test_job_changed AFTER INSERT OR UPDATE ON import_jobs FOR EACH ROW EXECUTE FUNCTION test_job_changed();`);
}

/**
 * Resolves with the job `read` answers once `done` holds of it: read when listening starts and after each commit that
 * changes job `id` (one read at a time; commits during a read ask for one more after it). Rejects naming `what` and
 * the job as last read after `timeoutMs`, or with the error of a read.
 */
export function waitForJobChange<Job>(engine: PostgresEngine, id: string, read: () => Promise<Job>, done: (job: Job) => boolean, what: string, timeoutMs: number): Promise<Job> {
  return new Promise<Job>((resolve, reject) => {
    let last: Job | undefined;
    let reading = false;
    let again = false;
    let settled = false;
    const finish = (error: Error | undefined, job?: Job) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      unlisten();
      if (error) reject(error);
      else resolve(job!);
    };
    const check = (): void => {
      if (settled) return;
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      read().then(
        (job) => {
          reading = false;
          last = job;
          if (done(job)) return finish(undefined, job);
          if (again) {
            again = false;
            check();
          }
        },
        (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
      );
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms waiting until ${what}; the job as last read: ${JSON.stringify(last)}`)), timeoutMs);
    const unlisten = engine.listen(CHANNEL, (payload) => payload === id && check(), check);
  });
}
