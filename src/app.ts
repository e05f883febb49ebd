// The service: its middleware order and its route table, with the role each route needs.
import { createHash, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from './config.ts';
import { openStorage, type ServiceEngine } from './storage.ts';
import { createAccessTokens } from './domain/access-tokens.ts';
import type { AuthUser, Role } from './domain/auth-user.ts';
import { systemClock, type Clock } from './domain/clock.ts';
import { PRODUCTION_PASSWORD_COST, type PasswordCost } from './domain/passwords.ts';
import { compose } from './http/chain.ts';
import type { Context } from './http/context.ts';
import { clientAddressOf } from './http/client-address.ts';
import { cors } from './http/cors.ts';
import { createListener } from './http/listener.ts';
import { createLogger, type Logger } from './http/logger.ts';
import { route, type Route } from './http/operation.ts';
import { operationRunner } from './http/run-operation.ts';
import { parseBody } from './http/validate.ts';
import { toolRunner } from './chat/tool-runner.ts';
import { authenticate, authorize, invoke, routeRequest, validate } from './http/pipeline.ts';
import { idempotentRequests } from './http/idempotency.ts';
import { LocalInFlightRequests } from './http/in-flight.ts';
import { consoleFiles, loadConsoleFiles } from './http/static-files.ts';
import { concurrentPerUser } from './http/concurrency.ts';
import { callsPerUser, failuresPerKey } from './http/rate-limits.ts';
import { createLanguageModel } from './llm/index.ts';
import type { Sleep } from './llm/sleep.ts';
import { campaignOperations } from './routes/campaigns.ts';
import { campaignVersionOperations } from './routes/campaign-versions.ts';
import { chatOperations } from './routes/chat.ts';
import { createConversation } from './chat/conversation.ts';
import { Router } from './http/router.ts';
import { authOperations } from './routes/auth.ts';
import { customerOperations } from './routes/customers.ts';
import { importJobOperations } from './routes/imports.ts';
import { exportOperations } from './routes/exports.ts';
import { segmentOperations } from './routes/segments.ts';
import { systemOperations } from './routes/system.ts';
import { userOperations } from './routes/users.ts';
import { webhookOperations } from './routes/webhooks.ts';

export interface AppDeps {
  engine: ServiceEngine;
  config: Config;
  /** The key access tokens are signed with: config.tokenSecret unless given (on PostgreSQL, the one kept in the database). */
  tokenSecret?: Buffer;
  clock?: Clock;
  fetch?: typeof globalThis.fetch;
  /** Waits of the model layer (retry backoff, local streaming pace). */
  sleep?: Sleep;
  /** Randomness of retry jitter, in [0, 1). */
  random?: () => number;
  logger?: Logger;
  /** The scrypt cost of new password hashes and of the dummy hash; the production cost unless a test lowers it. */
  passwordCost?: PasswordCost;
}

const ANYONE = 'public';
const SIGNED_IN = 'signed_in';
const ADMIN: readonly Role[] = ['admin'];
const LEAD_OR_ADMIN: readonly Role[] = ['marketing_lead', 'admin'];
/** The web console's pages, styles and scripts, served at `/`. */
const CONSOLE_DIR = fileURLToPath(new URL('./console/', import.meta.url));
/** Paths that belong to the API: the console never answers them, even for a file of the same name. */
const API_PREFIXES = ['/v1', '/health'];

/**
 * Where CSV uploads wait for their import job: beside the SQLite file; on PostgreSQL in a folder of the system's
 * temporary files named after the database (the same at every start, which empties it, so the upload of a job a
 * killed process left is removed too); for an in-memory database a folder of its own.
 */
function importFolder(config: Config): string {
  const { databasePath, databaseUrl } = config;
  if (databaseUrl !== undefined) return join(tmpdir(), `campaigns-imports-${createHash('sha256').update(databaseUrl).digest('hex').slice(0, 16)}`);
  return databasePath === ':memory:' ? join(tmpdir(), `campaigns-imports-${randomUUID()}`) : `${databasePath}.imports`;
}

/** Returns the request listener and the route table of the service. */
export function createApp({ engine, config, tokenSecret = config.tokenSecret, clock = systemClock, fetch, sleep, random, logger = createLogger(config.logLevel), passwordCost = PRODUCTION_PASSWORD_COST }: AppDeps) {
  if (!tokenSecret) throw new Error('createApp needs the token secret: TOKEN_SECRET, or on PostgreSQL the one tokenSecretOf reads.');
  /** The origin links in webhook events point at: PUBLIC_URL, else the address the service listens at (see `listeningAt`). */
  let publicUrl = config.publicUrl ?? `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  const uploads = importFolder(config);
  const storage = openStorage(engine, {
    clock,
    logger,
    webhooks: {
      clock,
      fetch: fetch ?? globalThis.fetch,
      logger,
      retryScheduleMs: config.webhooks.retryScheduleMs,
      timeoutMs: config.webhooks.timeoutMs,
      publicUrl: () => publicUrl,
    },
    imports: { folder: uploads, maxBytes: config.importMaxBytes, cacheMiB: config.cacheMiB.imports },
    instances: config.instances,
  });
  const { users, segments: segmentRepository, campaigns: campaignRepository, chats: chatRepository, webhooks } = storage;
  const { customers: customerRepository, audience, customerChanges, customerExport } = storage;
  const accessTokens = createAccessTokens(tokenSecret, config.accessTokenTtlSeconds);
  const signInFailures = storage.rateCounter('sign_in', { limit: config.signInMaxFailures, windowMs: config.signInWindowSeconds * 1000 });

  const signInAttempts = failuresPerKey(
    signInFailures,
    (ctx) => `${ctx.clientAddress}|${(ctx.input!.body as { email: string }).email}`,
    clock,
    'Too many failed sign-ins',
  );
  const auth = authOperations({ users, refreshTokens: storage.refreshTokens, accessTokens, config, clock, passwordCost });
  const people = userOperations({ users, clock, passwordCost });
  const customers = customerOperations({ customers: customerRepository, clock });
  const imports = importJobOperations({ jobs: storage.importJobs });
  const model = createLanguageModel(config.llm, { logger, fetch, sleep, random, now: clock });
  const segments = segmentOperations({ segments: segmentRepository, audience, customers: customerRepository, model, clock });
  const campaigns = campaignOperations({ campaigns: campaignRepository, segments: segmentRepository, audience, model, clock });
  const versions = campaignVersionOperations({ campaigns: campaignRepository, segments: segmentRepository, audience, model, clock });
  const csvExports = exportOperations({ campaigns: campaignRepository, segments: segmentRepository, customers: customerExport, clock });
  /** One budget per user for everything that calls the model: campaign generation and chat messages. */
  const modelCalls = callsPerUser(storage.rateCounter('model_calls', { limit: config.modelCallsPerMinute, windowMs: 60_000 }), clock);
  /** The route table's operations run as a user: the assistant's read tools and confirmed proposals. */
  const run = operationRunner(() => routes);
  const conversation = createConversation({
    chats: chatRepository,
    customers: customerRepository,
    segments: segmentRepository,
    model,
    runTool: toolRunner({ validate: parseBody, segments: segmentRepository }),
    clock,
    customersGeneration: () => customerChanges.generation(),
    promptBudget: config.chat.promptBudget,
  });
  const chat = chatOperations({ chats: chatRepository, conversation, model, clock, logger, heartbeatMs: config.chat.heartbeatMs, run });
  /** Reply streams open at once, per user and in all. */
  const openStreams = concurrentPerUser({ slots: storage.streamSlots(config.chat.streamsPerUser, config.chat.streamsTotal), what: 'Too many reply streams open' });
  const idempotent = idempotentRequests(storage.idempotencyKeys, new LocalInFlightRequests(), clock);
  const system = systemOperations({ engine, routes: () => routes, currency: config.currency });
  const hooks = webhookOperations({ webhooks, clock });

  const routes: Route[] = [
    route('GET', '/health', ANYONE, system.health),
    route('GET', '/v1/openapi.json', ANYONE, system.openapi),
    route('GET', '/v1/settings', SIGNED_IN, system.settings),

    route('POST', '/v1/auth/sign-in', ANYONE, auth.signIn, { limit: signInAttempts }),
    route('POST', '/v1/auth/refresh', ANYONE, auth.refresh),
    route('POST', '/v1/auth/sign-out', SIGNED_IN, auth.signOut),

    route('GET', '/v1/me', SIGNED_IN, people.me),
    route('GET', '/v1/users', ADMIN, people.list),
    route('POST', '/v1/users', ADMIN, people.create),
    route('PATCH', '/v1/users/{id}', ADMIN, people.update),

    route('GET', '/v1/customers', SIGNED_IN, customers.list),
    route('POST', '/v1/customers', SIGNED_IN, customers.create),
    route('GET', '/v1/customers/kpis', SIGNED_IN, customers.kpis),
    route('GET', '/v1/customers/trend', SIGNED_IN, customers.trend),
    route('GET', '/v1/customers/health', SIGNED_IN, customers.health),
    route('GET', '/v1/customers/top', SIGNED_IN, customers.top),
    route('POST', '/v1/customers/import', SIGNED_IN, customers.importMany),
    route('POST', '/v1/customers/imports', SIGNED_IN, imports.importFile),
    route('POST', '/v1/customers/imports/preview', SIGNED_IN, imports.previewImport),
    route('GET', '/v1/customers/imports', SIGNED_IN, imports.listImports),
    route('GET', '/v1/customers/imports/{id}', SIGNED_IN, imports.getImport),
    route('GET', '/v1/customers/imports/{id}/failures.csv', SIGNED_IN, imports.importFailures),
    route('GET', '/v1/customers/{id}', SIGNED_IN, customers.get),
    route('PATCH', '/v1/customers/{id}', SIGNED_IN, customers.update),
    route('DELETE', '/v1/customers/{id}', LEAD_OR_ADMIN, customers.remove),

    route('GET', '/v1/segments', SIGNED_IN, segments.list),
    route('POST', '/v1/segments', SIGNED_IN, segments.create),
    route('POST', '/v1/segments/preview', SIGNED_IN, segments.preview),
    route('POST', '/v1/segments/draft', SIGNED_IN, segments.draft, { limit: modelCalls }),
    route('GET', '/v1/segments/{id}', SIGNED_IN, segments.get),
    route('PATCH', '/v1/segments/{id}', SIGNED_IN, segments.update),
    route('DELETE', '/v1/segments/{id}', SIGNED_IN, segments.remove),
    route('GET', '/v1/segments/{id}/customers.csv', SIGNED_IN, csvExports.segmentCustomers),

    route('POST', '/v1/campaigns/generate', SIGNED_IN, campaigns.generate, { idempotent, limit: modelCalls }),
    route('GET', '/v1/campaigns', SIGNED_IN, campaigns.list),
    route('GET', '/v1/campaigns/{id}', SIGNED_IN, campaigns.get),
    route('PATCH', '/v1/campaigns/{id}', SIGNED_IN, campaigns.update),
    route('DELETE', '/v1/campaigns/{id}', SIGNED_IN, campaigns.remove),
    route('PATCH', '/v1/campaigns/{id}/status', SIGNED_IN, campaigns.setStatus),
    route('GET', '/v1/campaigns/{id}/events', SIGNED_IN, campaigns.events),
    route('GET', '/v1/campaigns/{id}/audience', SIGNED_IN, campaigns.audience),
    route('POST', '/v1/campaigns/{id}/revise', SIGNED_IN, versions.revise, { idempotent, limit: modelCalls }),
    route('POST', '/v1/campaigns/{id}/variants', SIGNED_IN, versions.variants, { idempotent, limit: modelCalls }),
    route('GET', '/v1/campaigns/{id}/versions', SIGNED_IN, versions.versions),
    route('POST', '/v1/campaigns/{id}/versions/{version}/restore', SIGNED_IN, versions.restore),
    route('GET', '/v1/campaigns/{id}/audience.csv', SIGNED_IN, csvExports.campaignAudience),

    route('POST', '/v1/chat/threads', SIGNED_IN, chat.createThread),
    route('GET', '/v1/chat/threads', SIGNED_IN, chat.listThreads),
    route('GET', '/v1/chat/threads/{id}', SIGNED_IN, chat.getThread),
    route('DELETE', '/v1/chat/threads/{id}', SIGNED_IN, chat.deleteThread),
    route('GET', '/v1/chat/threads/{id}/messages', SIGNED_IN, chat.listMessages),
    route('POST', '/v1/chat/threads/{id}/messages', SIGNED_IN, chat.send, { limit: modelCalls }),
    route('POST', '/v1/chat/threads/{id}/messages/stream', SIGNED_IN, chat.stream, { concurrency: openStreams, limit: modelCalls }),
    route('POST', '/v1/chat/threads/{id}/actions/{actionId}/confirm', SIGNED_IN, chat.confirmAction),
    route('POST', '/v1/chat/threads/{id}/actions/{actionId}/reject', SIGNED_IN, chat.rejectAction),

    route('POST', '/v1/webhooks', ADMIN, hooks.create),
    route('GET', '/v1/webhooks', ADMIN, hooks.list),
    route('GET', '/v1/webhooks/{id}', ADMIN, hooks.get),
    route('PATCH', '/v1/webhooks/{id}', ADMIN, hooks.update),
    route('DELETE', '/v1/webhooks/{id}', ADMIN, hooks.remove),
    route('POST', '/v1/webhooks/{id}/rotate-secret', ADMIN, hooks.rotateSecret),
    route('POST', '/v1/webhooks/{id}/test', ADMIN, hooks.test),
    route('GET', '/v1/webhooks/{id}/deliveries', ADMIN, hooks.listDeliveries),
  ];

  const router = new Router<Route>();
  for (const r of routes) router.add(r.method, r.path, r);

  const activeUser = async (id: string): Promise<AuthUser | undefined> => {
    const user = await users.findUser(id);
    return user?.isActive ? { id: user.id, role: user.role } : undefined;
  };

  const handle = compose<Context>([
    cors(config.corsOrigins),
    consoleFiles(loadConsoleFiles(CONSOLE_DIR), API_PREFIXES), // GET/HEAD outside the API: the console
    routeRequest(router), // 404, 405
    authenticate(accessTokens, activeUser, clock), // 401
    authorize(), // 403
    validate(), // 400
    invoke(), // the route's guards (idempotency 409, limits 429), then the handler
  ]);

  const stopping = new AbortController();
  return {
    listener: createListener(handle, logger, stopping.signal, clientAddressOf(config.trustedProxies)),
    routes,
    /** The users, for the first admin made at start-up. */
    users,
    /** Where CSV uploads wait for their import job. */
    uploads,
    /** Settles once the storage is ready to serve: await it before listening. */
    ready: storage.ready,
    /** Aborts every request still running (model calls, streams) and webhook attempts under way: the service is stopping. */
    abortRequests: () => {
      stopping.abort(new Error('The service is stopping.'));
      webhooks.abort();
    },
    /** Starts no more webhook attempts nor import jobs (PostgreSQL) and stops listening; resolves once what was under way has ended. Call it before closing the database. */
    stopBackground: () => storage.stop(),
    /** Ends this instance's lease (PostgreSQL): call it once no request runs any more, before closing the database. */
    leave: () => storage.leave(),
    /** Tells the app the URL it is reached at once it listens: links in webhook events use it unless PUBLIC_URL is set. */
    listeningAt: (url: string) => {
      if (config.publicUrl === undefined) publicUrl = url;
    },
  };
}
