// Backups, the subsystem's one door: a consistent copy of the live database (`npm run backup`), and the schedule the
// service runs when BACKUP_DIR is set.
//
//   copy.ts         one backup: a partial file, checked, flushed, then its final name
//   copy.thread.ts  the copy (VACUUM INTO) and its integrity_check, off the event loop
//   schedule.ts     one at start-up, then every BACKUP_EVERY_HOURS, the newest BACKUP_KEEP kept (by the leader of
//                   `backup-schedule`: one instance of a deployment)
export { backupDatabase, type Backup } from './copy.ts';
export { startBackupSchedule, type BackupSchedule, type BackupScheduleOptions } from './schedule.ts';
