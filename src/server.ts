// Starting and stopping the service process.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createApp } from './app.ts';
import { startBackupSchedule } from './backup/index.ts';
import { ConfigError, type Config } from './config.ts';
import { openServiceEngine, type ServiceEngine } from './storage.ts';
import { systemClock } from './domain/clock.ts';
import { prepareFirstAdmin } from './first-admin.ts';
import { createLogger } from './http/logger.ts';

export interface RunningService {
  server: Server;
  engine: ServiceEngine;
  url: string;
  /** Stops accepting connections, lets requests in flight finish for up to `graceMs`, then closes the database. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Returns the limits on slow clients: a request's headers and the whole request within the configured times
 * (10 s and 60 s by default), checked every second; an idle kept-alive connection closes after 5 s (node:http adds 1 s).
 */
export function serverTimeouts(config: Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs'>) {
  return { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 };
}

/**
 * Closes a kept-alive connection whose keep-alive time ran out, as node:http does, but one event-loop turn later and
 * only if nothing arrived meanwhile. After a long stretch of synchronous work (many large imports at once) the timer
 * fires before the loop reads a request that arrived in time, and closing then resets the connection under it.
 */
function closeIdleOnlyAfterReading(server: Server): void {
  // With a 'timeout' listener node:http leaves the socket open; this listener decides. Only the keep-alive timer
  // sets a socket timeout here (server.timeout is 0; slow requests are cut by headersTimeout and requestTimeout).
  server.on('timeout', (socket: Socket) => {
    const read = socket.bytesRead;
    setImmediate(() => {
      if (socket.bytesRead === read) socket.destroy();
    });
  });
}

/**
 * Listens and runs `onListening` before any connection is served (node:http emits 'listening' on the next tick, and
 * accepts connections only once the event loop turns: work that awaits only promises settled without I/O is done by
 * then), or throws `ConfigError` naming PORT when the address is taken.
 */
function listen(server: Server, config: Config, onListening: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') reject(new ConfigError('PORT', `port ${config.port} on ${config.host} is already in use; set PORT to a free port`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new ConfigError('HOST', `${config.host} is not an address of this machine`));
      else reject(error);
    });
    server.listen(config.port, config.host, () => {
      onListening().then(resolve, reject);
    });
  });
}

/**
 * Opens the database, listens, and starts the backup schedule when BACKUP_DIR is set; returns the running service.
 * The first admin is checked and hashed before listening, then stored the moment the port is ours, before any request
 * is served: from the first 200 of /health it can sign in, and a failed start never prints a password for a service
 * that is not there.
 */
export async function startService(config: Config): Promise<RunningService> {
  const logger = createLogger(config.logLevel);
  const { engine, tokenSecret } = await openServiceEngine(config, (error) => logger.error('database error', { error: String(error) }));
  const app = createApp({ engine, config, tokenSecret, logger });
  const server = createServer(serverTimeouts(config), app.listener);
  closeIdleOnlyAfterReading(server);
  try {
    const firstAdmin = await prepareFirstAdmin(app.users, config.admin);
    await app.ready;
    await listen(server, config, async () => {
      const announcement = await firstAdmin?.create(systemClock());
      if (announcement) process.stderr.write(announcement);
    });
  } catch (error) {
    server.close();
    await app.stopBackground();
    await app.leave();
    await engine.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  app.listeningAt(url);
  const { provider, model, baseUrl } = config.llm;
  logger.info('listening', {
    url,
    // A URL is shown without its password.
    database: config.databaseUrl?.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1@') ?? config.databasePath,
    llmProvider: provider,
    llmModel: provider === 'local' ? 'local' : model,
    // Never the key; and a base URL carrying credentials is shown without them.
    ...(provider === 'local' || !baseUrl ? {} : { llmBaseUrl: baseUrl.replace(/\/\/[^/@]*@/, '//') }),
  });

  const { dir: backupDir, everyHours, keep } = config.backup;
  const backups = backupDir === undefined ? undefined : startBackupSchedule({ databasePath: config.databasePath, dir: backupDir, everyHours, keep, logger, leadership: engine.leadership });

  const stop = async (graceMs = 10_000) => {
    const backupsStopped = backups?.stop(); // a backup under way is abandoned while requests finish
    const deliveriesStopped = app.stopBackground(); // webhook attempts under way finish within the grace too
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => {
      app.abortRequests(); // model calls, streams and webhook attempts end now, so their connections close cleanly
      server.closeAllConnections();
    }, graceMs);
    await Promise.all([closed, deliveriesStopped]);
    clearTimeout(timer);
    await backupsStopped;
    // Only now that no request runs: until then their idempotency keys, stream slots and confirms hold.
    await app.leave();
    await engine.close();
    logger.info('stopped');
  };
  return { server, engine, url, stop };
}
