// Backups on a schedule: one when the service starts, then one every BACKUP_EVERY_HOURS into BACKUP_DIR, keeping the
// newest BACKUP_KEEP. A failed backup is logged and the next one runs on time; the service never stops for it.
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Leadership } from '../db/engine.ts';
import type { Logger } from '../http/logger.ts';
import { BackupAbandoned, backupDatabase } from './copy.ts';

/** A finished scheduled backup: named after the UTC instant it started, so the names sort by time. */
const FINISHED = /^campaigns-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z\.db$/;
/** What a scheduled backup cut short by a crash left behind: its partial file, and the journal of its copy. */
const PARTIAL = /^\.campaigns-.*\.partial(?:-journal)?$/;
/** The longest delay a timer takes (about 24.8 days); a longer wait is made of several. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The loop that runs once in a deployment: only the instance that leads it takes backups. */
const LEAD = 'backup-schedule';

/** Returns the name of the scheduled backup started at `at`: `campaigns-2026-11-23T15-30-00.000Z.db`. */
export function backupFileName(at: Date): string {
  return `campaigns-${at.toISOString().replaceAll(':', '-')}.db`;
}

/** Where and how often the schedule backs up, and who runs it. */
export interface BackupScheduleOptions {
  databasePath: string;
  dir: string;
  everyHours: number;
  keep: number;
  logger: Logger;
  /** Asked at every due time: an instance that does not lead `backup-schedule` skips that backup. */
  leadership: Leadership;
}

/** The running schedule. */
export interface BackupSchedule {
  /** Takes no more backups; one under way is abandoned (its partial file removed). Resolves once nothing runs. */
  stop(): Promise<void>;
}

/**
 * Takes a backup now and then every `everyHours` (counted from each start), while this instance leads
 * `backup-schedule`; logs one line per backup.
 */
export function startBackupSchedule({ databasePath, dir, everyHours, keep, logger, leadership }: BackupScheduleOptions): BackupSchedule {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  /** Whether this instance leads the schedule now; a leadership that cannot answer counts as no. */
  const leads = async () => {
    try {
      return await leadership.tryLead(LEAD);
    } catch (error) {
      logger.error('backup skipped: who leads the schedule is unknown', { error: error instanceof Error ? error.message : String(error) });
      return false;
    }
  };

  /** Takes the backup named after `started`, then keeps the newest `keep`; logs how it went, never throws. */
  const takeOne = async (started: number) => {
    const file = join(dir, backupFileName(new Date(started)));
    try {
      await mkdir(dir, { recursive: true });
      await removePartials(dir);
      const backup = await backupDatabase(databasePath, file, stopping.signal);
      const removed = await removeBeyondNewest(dir, keep);
      logger.info('backup', { file: backup.file, bytes: backup.bytes, ms: backup.ms, removed });
    } catch (error) {
      if (error instanceof BackupAbandoned) logger.info('backup abandoned: the service is stopping', { file });
      else logger.error('backup failed', { file, error: error instanceof Error ? error.message : String(error) });
    }
  };

  /** Takes the backup due now if this instance leads, then waits for the next one. */
  const round = async () => {
    const started = Date.now();
    if ((await leads()) && !stopping.signal.aborted) await takeOne(started);
    waitUntil(started + everyHours * 3_600_000);
  };

  const waitUntil = (due: number) => {
    if (stopping.signal.aborted) return;
    const delay = due - Date.now();
    timer = setTimeout(() => {
      if (delay > MAX_TIMER_MS) waitUntil(due);
      else running = round();
    }, Math.min(Math.max(delay, 0), MAX_TIMER_MS));
    timer.unref();
  };

  running = round();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
      await leadership.resign(LEAD);
    },
  };
}

/** Removes what backups cut short by a crash left in `dir`. */
async function removePartials(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (PARTIAL.test(name)) await rm(join(dir, name), { force: true });
  }
}

/** Removes all but the newest `keep` finished backups in `dir` (other files are left alone); returns their names. */
async function removeBeyondNewest(dir: string, keep: number): Promise<string[]> {
  const finished = (await readdir(dir)).filter((name) => FINISHED.test(name)).sort();
  const old = finished.slice(0, Math.max(0, finished.length - keep));
  for (const name of old) await rm(join(dir, name), { force: true });
  return old;
}
