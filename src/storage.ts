// Where the service keeps everything, on either engine: the repositories, the customer subsystem, the CSV import jobs
// and the webhooks, composed for SQLite (engine.ts) or PostgreSQL (pg-engine.ts). app.ts takes what this returns and
// never asks which engine it runs on; this is the one file that does.
import { randomUUID } from 'node:crypto';
import type { CampaignRepository } from './db/campaigns.ts';
import { createCampaignRepository } from './db/campaigns.ts';
import type { ChatRepository } from './db/chat.ts';
import { createChatRepository } from './db/chat.ts';
import type { Config } from './config.ts';
import { openSqliteEngine, type SqliteEngine } from './db/engine.ts';
import type { IdempotencyKeyRepository } from './db/idempotency-keys.ts';
import { createIdempotencyKeyRepository } from './db/idempotency-keys.ts';
import { PostgresEngine } from './db/pg-engine.ts';
import { registerInstance } from './db/postgres/instances.ts';
import { migratePostgres, tokenSecretOf } from './db/postgres/migrate.ts';
import { createPgCampaignRepository } from './db/postgres/campaigns.ts';
import { createPgChatRepository } from './db/postgres/chat.ts';
import { createPgIdempotencyKeyRepository } from './db/postgres/idempotency-keys.ts';
import { createPgRateCounter } from './db/postgres/rate-counters.ts';
import { createPgSlotPool } from './db/postgres/stream-slots.ts';
import { createPgRefreshTokenRepository } from './db/postgres/refresh-tokens.ts';
import { createPgSegmentRepository } from './db/postgres/segments.ts';
import { createPgUserRepository } from './db/postgres/users.ts';
import type { RefreshTokenRepository } from './db/refresh-tokens.ts';
import { createRefreshTokenRepository } from './db/refresh-tokens.ts';
import type { SegmentRepository } from './db/segments.ts';
import { createSegmentRepository } from './db/segments.ts';
import type { UserRepository } from './db/users.ts';
import { createUserRepository } from './db/users.ts';
import {
  openCustomers,
  openImportJobs,
  openPgCustomers,
  repairInterruptedBulkLoad,
  type AudienceIndex,
  type ChangeSource,
  type CustomerExport,
  type CustomerRepository,
  type ImportJob,
  type ImportJobs,
} from './customers/index.ts';
import type { Clock } from './domain/clock.ts';
import { SlidingWindowLimiter, type RateCounter, type RateLimit } from './domain/rate-limiter.ts';
import { InMemorySlotPool, type SlotPool } from './domain/slot-pool.ts';
import type { Logger } from './http/logger.ts';
import { openPgWebhooks, openWebhooks, type AnyWebhooks, type WebhooksOptions } from './webhooks/index.ts';

/** The engines the service runs on. */
export type ServiceEngine = SqliteEngine | PostgresEngine;

/**
 * Opens the database the configuration names, current and ready to serve: DATABASE_URL's PostgreSQL (its schema
 * created or upgraded, once across instances starting at once) or DATABASE_PATH's SQLite file (a seed killed
 * part-way repaired). Resolves with the key access tokens are signed with: TOKEN_SECRET, else the one kept beside the
 * SQLite file or in the PostgreSQL database. `onError` is told of database failures nobody awaits.
 */
export async function openServiceEngine(config: Config, onError: (error: unknown) => void): Promise<{ engine: ServiceEngine; tokenSecret: Buffer }> {
  if (config.databaseUrl === undefined) {
    const engine = openSqliteEngine(config.databasePath, { cacheMiB: config.cacheMiB.service });
    // A seed killed part-way left rows that the search index and the aggregates do not count yet.
    repairInterruptedBulkLoad(engine.db);
    return { engine, tokenSecret: config.tokenSecret! };
  }
  const engine = new PostgresEngine(config.databaseUrl, { onError });
  try {
    await migratePostgres(engine);
    return { engine, tokenSecret: config.tokenSecret ?? (await tokenSecretOf(engine)) };
  } catch (error) {
    await engine.close().catch(() => {});
    throw error;
  }
}

/** What the service stores and reads, whatever the engine. */
export interface Storage {
  users: UserRepository;
  refreshTokens: RefreshTokenRepository;
  /** The idempotency keys, claimed under this process's own owner id. */
  idempotencyKeys: IdempotencyKeyRepository;
  /** A rate limit's counter (`scope` names the limit), counted across every instance on PostgreSQL, in this process on SQLite. */
  rateCounter(scope: string, rule: RateLimit): RateCounter;
  /** Reply-stream slots: `perHolder` counted across every instance on PostgreSQL; `total` is each process's own cap. */
  streamSlots(perHolder: number, total: number): SlotPool;
  segments: SegmentRepository;
  /** The campaigns, whose moves write their webhook events in the move's transaction. */
  campaigns: CampaignRepository;
  chats: ChatRepository;
  customers: CustomerRepository;
  /** The in-memory columns every segment count runs on. */
  audience: AudienceIndex;
  /** Every committed customer write, in commit order: the customers generation moves with each. */
  customerChanges: ChangeSource;
  /** The customers within a segment's bounds, read in id order for a download. */
  customerExport: CustomerExport;
  importJobs: ImportJobs;
  webhooks: AnyWebhooks;
  /** Settles once what the storage starts with is done (on PostgreSQL: the change feed listens, stale jobs are marked). */
  ready: Promise<void>;
  /** Starts no more webhook attempts nor import jobs and stops listening; resolves once what was under way has ended. */
  stop(): Promise<void>;
  /**
   * PostgreSQL: ends this instance's lease, so that what it still holds (idempotency keys, stream slots, confirms)
   * passes to the others at once. Call it once no request runs any more, after `stop`, before closing the database.
   */
  leave(): Promise<void>;
}

/** What the storage needs besides the engine. */
export interface StorageOptions {
  clock: Clock;
  logger: Logger;
  /** The webhooks' settings (their delivery clock, fetch, logger, retries, timeout and public URL). */
  webhooks: WebhooksOptions;
  /** CSV import jobs: where uploads wait, the largest accepted, and the SQLite import writer's page cache. */
  imports: { folder: string; maxBytes: number; cacheMiB: number };
  /** PostgreSQL: this instance's lease among the others on the database (db/postgres/instances.ts). */
  instances: { leaseMs: number; heartbeatMs: number };
}

/** Returns the users on `engine`: what `npm run user` needs without the rest of the storage. */
export function usersOn(engine: ServiceEngine): UserRepository {
  return engine.kind === 'sqlite' ? createUserRepository(engine) : createPgUserRepository(engine);
}

/** Composes the service's storage on `engine`; the webhook dispatcher and the import jobs start here. */
export function openStorage(engine: ServiceEngine, options: StorageOptions): Storage {
  return engine.kind === 'sqlite' ? openSqliteStorage(engine, options) : openPgStorage(engine, options);
}

/** Told when an import job has ended: the log line of every job. */
function jobEndLogger(logger: Logger) {
  return ({ id, status, rowsRead, imported, skipped }: ImportJob) => logger.info('import job ended', { jobId: id, status, rowsRead, imported, skipped });
}

function openSqliteStorage(engine: SqliteEngine, { clock, logger, webhooks: webhookOptions, imports }: StorageOptions): Storage {
  const customers = openCustomers(engine, { warm: true, importCacheMiB: imports.cacheMiB });
  const webhooks = openWebhooks(engine, webhookOptions);
  const importJobs = openImportJobs(customers.imports, customers.store, {
    folder: imports.folder,
    maxBytes: imports.maxBytes,
    clock,
    onEnd: jobEndLogger(logger),
    onFinish: webhooks.outbox.importFinished, // customers.import_completed, in the transaction that ends the job
  });
  return {
    users: usersOn(engine),
    refreshTokens: createRefreshTokenRepository(engine),
    idempotencyKeys: createIdempotencyKeyRepository(engine, randomUUID()),
    rateCounter: (_scope, rule) => new SlidingWindowLimiter(rule),
    streamSlots: (perHolder, total) => new InMemorySlotPool(perHolder, total),
    segments: createSegmentRepository(engine),
    campaigns: createCampaignRepository(engine, { onMove: webhooks.outbox.campaignMoved }), // webhook events, in the move's transaction
    chats: createChatRepository(engine),
    customers: customers.store,
    audience: customers.audience,
    customerChanges: customers.feed,
    customerExport: customers.export,
    importJobs,
    webhooks,
    ready: Promise.resolve(),
    stop: () => webhooks.stop(),
    leave: async () => {},
  };
}

function openPgStorage(engine: PostgresEngine, { clock, logger, webhooks: webhookOptions, imports, instances }: StorageOptions): Storage {
  // First: every claim below names this instance, and lives as long as its lease.
  const instance = registerInstance(engine, { ...instances, onError: (error) => logger.error('instance heartbeat failed', { error: String(error) }) });
  const webhooks = openPgWebhooks(engine, webhookOptions);
  const customers = openPgCustomers(
    engine,
    {
      folder: imports.folder,
      maxBytes: imports.maxBytes,
      clock,
      onEnd: jobEndLogger(logger),
      onFinish: webhooks.outbox.importFinished, // customers.import_completed, in the transaction that ends the job
      instance: { id: instance.id, ready: instance.ready, heartbeatMs: instances.heartbeatMs }, // the jobs' owner, in one queue with the others'
      onError: (error) => logger.error('import job queue failed', { error: String(error) }),
    },
    (error) => logger.error('customer change feed failed', { error: String(error) }),
  );
  return {
    users: usersOn(engine),
    refreshTokens: createPgRefreshTokenRepository(engine),
    idempotencyKeys: createPgIdempotencyKeyRepository(engine, instance.id),
    rateCounter: (scope, rule) => createPgRateCounter(engine, scope, rule),
    streamSlots: (perHolder, total) => createPgSlotPool(engine, instance.id, perHolder, total),
    segments: createPgSegmentRepository(engine),
    campaigns: createPgCampaignRepository(engine, { onMove: webhooks.outbox.campaignMoved }), // webhook events, in the move's transaction
    chats: createPgChatRepository(engine, instance.id),
    customers: customers.store,
    audience: customers.audience,
    customerChanges: customers.feed,
    customerExport: customers.export,
    importJobs: customers.jobs,
    webhooks,
    ready: Promise.all([instance.ready, customers.ready]).then(() => {}),
    async stop() {
      await Promise.all([webhooks.stop(), customers.close()]);
    },
    // Not part of `stop`: requests still running after it (a stop's grace) hold keys and slots under this lease.
    leave: () => instance.stop(),
  };
}
