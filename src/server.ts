// Starting and stopping the service process.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { openDatabase, type Db } from './db/database.ts';
import { createUserRepository } from './db/users.ts';
import { systemClock } from './domain/clock.ts';
import { ensureFirstAdmin } from './first-admin.ts';
import { createLogger } from './http/logger.ts';

export interface RunningService {
  server: Server;
  db: Db;
  url: string;
  /** Stops accepting connections, lets requests in flight finish for up to `graceMs`, then closes the database. */
  stop(graceMs?: number): Promise<void>;
}

/** Opens the database, creates the first admin if needed and listens; returns the running service. */
export async function startService(config: Config): Promise<RunningService> {
  const logger = createLogger(config.logLevel);
  const db = openDatabase(config.databasePath);
  await ensureFirstAdmin(createUserRepository(db), config.admin, systemClock(), (text) => process.stderr.write(text));
  const app = createApp({ db, config, logger });
  const server = createServer({ keepAliveTimeout: 5000 }, app.listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info('listening', { url, database: config.databasePath, llmProvider: config.llm.provider });

  const stop = async (graceMs = 10_000) => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => {
      app.abortRequests(); // model calls and streams end now, so their connections close cleanly
      server.closeAllConnections();
    }, graceMs);
    await closed;
    clearTimeout(timer);
    db.close();
    logger.info('stopped');
  };
  return { server, db, url, stop };
}
