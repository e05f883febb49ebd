// Configuration from environment variables, validated once at start-up.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname } from 'node:path';
import { LOG_LEVELS, type LogLevel } from './http/logger.ts';

/** Who writes the replies: a Chat Completions server, the Anthropic Messages API, or the built-in local generator. */
export type LlmProvider = 'openai' | 'anthropic' | 'local';
/** How an OpenAI-compatible server is asked for JSON: a strict schema, any JSON object, or only by the prompt. */
export type LlmJsonMode = 'json_schema' | 'json_object' | 'none';
/** The name of the reply-length bound an OpenAI-compatible server is sent. */
export type TokenParameter = 'max_tokens' | 'max_completion_tokens';

/** The LLM_* settings: which provider, how to reach it, and how hard to try. src/llm/ derives its providers' settings from it. */
export interface LlmSettings {
  provider: LlmProvider;
  /** Ends before `/chat/completions` or `/messages`, for example `https://api.openai.com/v1`. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** Always set for `openai` and `anthropic`; the local generator needs none. */
  model: string | undefined;
  jsonMode: LlmJsonMode;
  /** Bound on one reply's tokens, reasoning included. */
  maxTokens: number;
  /** OpenAI-compatible servers: unset, `max_completion_tokens` for api.openai.com and `max_tokens` elsewhere. */
  tokenParameter: TokenParameter | undefined;
  /** An attempt fails after this long without a single byte from the provider. */
  timeoutMs: number;
  maxRetries: number;
  /** One call, its retries and waits included, ends after this long. */
  maxDurationMs: number;
}

export interface Config {
  port: number;
  host: string;
  /** The SQLite file (DATABASE_PATH); unused when `databaseUrl` is set. */
  databasePath: string;
  /** DATABASE_URL: the PostgreSQL database everything is stored in instead of the SQLite file, when set. */
  databaseUrl: string | undefined;
  /**
   * HMAC key for access tokens, at least 32 bytes: TOKEN_SECRET, else (SQLite) the one kept beside the database file;
   * undefined on PostgreSQL without TOKEN_SECRET, where it is kept in the database (db/postgres/migrate.ts `tokenSecretOf`).
   */
  tokenSecret: Buffer | undefined;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  llm: LlmSettings;
  corsOrigins: string[];
  logLevel: LogLevel;
  /** The largest CSV file an import job takes, in bytes. */
  importMaxBytes: number;
  /** SQLite page caches, MiB: the service's connection (reads), and the import writer's (large writes). */
  cacheMiB: { service: number; imports: number };
  /** Failed sign-ins allowed per client address and email within the window. */
  signInMaxFailures: number;
  signInWindowSeconds: number;
  /** Campaign generations and chat messages allowed per user per minute. */
  modelCallsPerMinute: number;
  chat: {
    /** Pause of a reply stream, in milliseconds, after which a `: keep-alive` comment goes out. */
    heartbeatMs: number;
    /** Upper bound on the characters of one assistant prompt: system message and turns together. */
    promptBudget: number;
    /** Reply streams open at once, per user and over the whole service. */
    streamsPerUser: number;
    streamsTotal: number;
  };
  admin: { email: string | undefined; password: string | undefined; name: string | undefined };
  /** Limits on slow clients: a request's headers, and the whole request with its body, must arrive within these. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Scheduled backups: none without `dir`; one at start-up, then every `everyHours`, the newest `keep` kept. */
  backup: { dir: string | undefined; everyHours: number; keep: number };
  /** The origin (and path prefix) clients reach the service at, for links in webhook events; unset: the listening address. */
  publicUrl: string | undefined;
  webhooks: {
    /** Waits before each retry of a failed delivery, in milliseconds; after the last one the delivery is `failed`. */
    retryScheduleMs: number[];
    /** An attempt without a 2xx answer within this long has failed. */
    timeoutMs: number;
  };
  /** ISO 4217 code (upper case) the console shows amounts in; unset: plain amounts, as the API has no currency. */
  currency: string | undefined;
  /**
   * PostgreSQL, several instances: each renews its lease every `heartbeatMs`; `leaseMs` after its last renewal an
   * instance counts as gone, and what it held (idempotency keys, stream slots, import jobs, confirms) passes on.
   */
  instances: { leaseMs: number; heartbeatMs: number };
  /** TRUSTED_PROXIES: the addresses of the reverse proxies in front, whose X-Forwarded-For names the client. */
  trustedProxies: string[];
}

/** An instance's lease and heartbeat unless INSTANCE_LEASE_MS and INSTANCE_HEARTBEAT_MS say otherwise. */
export const DEFAULT_INSTANCE_TIMES = { leaseMs: 10_000, heartbeatMs: 2_000 } as const;

/** The waits before the retries of a webhook delivery: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** A configuration value that stops the process; the message names the variable. */
export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Returns the validated configuration; throws `ConfigError` naming the first bad variable. */
export function loadConfig(env: Env): Config {
  const text = (name: string) => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  const integer = (name: string, fallback: number, min: number, max: number) => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = text(name) ?? fallback;
    if (!allowed.includes(raw as T)) throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got "${raw}"`);
    return raw as T;
  };
  const hours = (name: string, fallback: number, min: number, max: number) => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+(?:\.\d+)?$/.test(raw) || value < min || value > max) {
      throw new ConfigError(name, `expected a number of hours from ${min} to ${max} (decimals allowed), got "${raw}"`);
    }
    return value;
  };
  const url = (name: string) => {
    const raw = text(name);
    if (raw !== undefined && !/^https?:\/\/[^\s]+$/.test(raw)) throw new ConfigError(name, `expected an http(s) URL, got "${raw}"`);
    return raw?.replace(/\/+$/, '');
  };

  const databaseUrl = postgresUrl(text('DATABASE_URL'));
  if (databaseUrl !== undefined && text('DATABASE_PATH') !== undefined) {
    throw new ConfigError('DATABASE_URL', 'set either DATABASE_URL (PostgreSQL) or DATABASE_PATH (SQLite), not both');
  }
  const databasePath = text('DATABASE_PATH') ?? './data/campaigns.db';
  const baseUrl = url('LLM_BASE_URL');
  const provider = oneOf<LlmProvider>('LLM_PROVIDER', ['openai', 'anthropic', 'local'], baseUrl ? 'openai' : 'local');
  if (provider === 'openai' && !baseUrl) throw new ConfigError('LLM_BASE_URL', 'required when LLM_PROVIDER is openai');
  // A network provider without a model name would fail on every request; stop at start-up instead.
  if (provider !== 'local' && !text('LLM_MODEL')) throw new ConfigError('LLM_MODEL', `required when LLM_PROVIDER is ${provider}`);
  const corsOrigins = (text('CORS_ORIGINS') ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin)) throw new ConfigError('CORS_ORIGINS', `"${origin}" is not an origin like https://app.example.com`);
  }

  const headersTimeoutMs = integer('HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = integer('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  // node:http refuses a headers limit longer than the request limit; say so by name rather than with its stack.
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  const leaseMs = integer('INSTANCE_LEASE_MS', DEFAULT_INSTANCE_TIMES.leaseMs, 100, 600_000);
  const heartbeatMs = integer('INSTANCE_HEARTBEAT_MS', DEFAULT_INSTANCE_TIMES.heartbeatMs, 20, 300_000);
  // A lease renewed less often than twice in its life expires under a live instance at the first slow heartbeat.
  if (heartbeatMs * 2 > leaseMs) throw new ConfigError('INSTANCE_HEARTBEAT_MS', `must be at most half of INSTANCE_LEASE_MS (${leaseMs})`);
  const backupDir = text('BACKUP_DIR');
  if (backupDir !== undefined && databaseUrl !== undefined) {
    throw new ConfigError('BACKUP_DIR', "PostgreSQL is backed up with its own tools (pg_dump, base backups): see the README's section \"Backups on PostgreSQL\"; unset BACKUP_DIR");
  }
  if (backupDir !== undefined && databasePath === ':memory:') throw new ConfigError('BACKUP_DIR', 'an in-memory database (DATABASE_PATH=:memory:) cannot be backed up');

  return {
    port: integer('PORT', 3000, 0, 65535),
    host: text('HOST') ?? '127.0.0.1',
    databasePath,
    databaseUrl,
    tokenSecret: databaseUrl === undefined ? tokenSecret(text('TOKEN_SECRET'), databasePath) : configuredSecret(text('TOKEN_SECRET')),
    accessTokenTtlSeconds: integer('ACCESS_TOKEN_TTL', 900, 1, 86_400),
    refreshTokenTtlSeconds: integer('REFRESH_TOKEN_TTL', 604_800, 60, 31_536_000),
    llm: {
      provider,
      baseUrl: baseUrl ?? (provider === 'anthropic' ? 'https://api.anthropic.com/v1' : undefined),
      apiKey: text('LLM_API_KEY'),
      model: text('LLM_MODEL'),
      jsonMode: oneOf<LlmJsonMode>('LLM_JSON_MODE', ['json_schema', 'json_object', 'none'], 'json_schema'),
      maxTokens: integer('LLM_MAX_TOKENS', 1024, 16, 131_072),
      tokenParameter: text('LLM_TOKEN_PARAMETER') === undefined ? undefined : oneOf<TokenParameter>('LLM_TOKEN_PARAMETER', ['max_tokens', 'max_completion_tokens'], 'max_tokens'),
      timeoutMs: integer('LLM_TIMEOUT_MS', 20_000, 100, 600_000),
      maxRetries: integer('LLM_MAX_RETRIES', 2, 0, 10),
      maxDurationMs: integer('LLM_MAX_DURATION_MS', 300_000, 1_000, 3_600_000),
    },
    corsOrigins,
    logLevel: oneOf<LogLevel>('LOG_LEVEL', LOG_LEVELS, 'info'),
    importMaxBytes: integer('IMPORT_MAX_BYTES', 500 * 1024 * 1024, 1024, 64 * 1024 ** 3),
    // 32 MiB each: the service's reads of a million customers and a job's sorted batches (see customers/imports) lose
    // nothing measurable against 64 or 128, and each connection's cache is memory the process keeps once filled. At
    // 16 MiB the service's GET /v1/customers/health serves half as many requests at 50 connections, and a CSV job into
    // a million customers inserts about a fifth slower.
    cacheMiB: { service: integer('DB_CACHE_MIB', 32, 2, 65_536), imports: integer('IMPORT_CACHE_MIB', 32, 2, 65_536) },
    signInMaxFailures: integer('SIGN_IN_MAX_FAILURES', 8, 1, 1000),
    signInWindowSeconds: integer('SIGN_IN_WINDOW_SECONDS', 900, 1, 86_400),
    modelCallsPerMinute: integer('MODEL_CALLS_PER_MINUTE', 30, 1, 100_000),
    chat: {
      heartbeatMs: integer('CHAT_HEARTBEAT_MS', 15_000, 10, 600_000),
      promptBudget: integer('CHAT_PROMPT_BUDGET', 24_000, 4_000, 1_000_000),
      streamsPerUser: integer('CHAT_STREAMS_PER_USER', 3, 1, 1_000),
      streamsTotal: integer('CHAT_STREAMS_TOTAL', 100, 1, 100_000),
    },
    admin: { email: text('ADMIN_EMAIL'), password: env.ADMIN_PASSWORD, name: text('ADMIN_NAME') },
    headersTimeoutMs,
    requestTimeoutMs,
    // The shortest interval, 0.0001 hours (0.36 s), is there for tests; the longest is a year.
    backup: { dir: backupDir, everyHours: hours('BACKUP_EVERY_HOURS', 24, 0.0001, 8760), keep: integer('BACKUP_KEEP', 7, 1, 10_000) },
    publicUrl: publicUrl(text('PUBLIC_URL')),
    webhooks: {
      retryScheduleMs: retrySchedule(text('WEBHOOK_RETRY_SCHEDULE')),
      timeoutMs: integer('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    },
    currency: currency(text('CURRENCY')),
    // PostgreSQL only: how an instance tells the others it is alive, and how long after its last word its claims (a
    // request's idempotency key, a reply stream's slot, an import job, a confirm under way) pass to the others.
    instances: { leaseMs, heartbeatMs },
    trustedProxies: trustedProxies(text('TRUSTED_PROXIES')),
  };
}

/**
 * Returns DATABASE_URL as given; throws `ConfigError` unless it is a postgres:// or postgresql:// URL. libpq's syntax
 * (several hosts `h1:5432,h2:5432`, `sslmode`, `target_session_attrs`) is left to the client to read.
 */
function postgresUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (!/^postgres(?:ql)?:\/\/\S*$/.test(raw)) {
    throw new ConfigError('DATABASE_URL', `expected a postgres:// or postgresql:// URL such as postgres://campaigns@db.example.com/campaigns, got "${raw.replace(/\/\/[^/@]*@/, '//')}"`);
  }
  return raw;
}

/** Returns the addresses of TRUSTED_PROXIES (comma-separated IPv4 or IPv6 addresses); throws `ConfigError` for anything else. */
function trustedProxies(raw: string | undefined): string[] {
  const addresses = (raw ?? '').split(',').map((part) => part.trim()).filter(Boolean);
  for (const address of addresses) {
    if (isIP(address) === 0) throw new ConfigError('TRUSTED_PROXIES', `expected comma-separated IP addresses of the proxies in front (such as 127.0.0.1,10.0.0.2), got "${address}"`);
  }
  return addresses;
}

/** Returns CURRENCY upper-cased (`eur` is EUR); throws `ConfigError` unless it is three letters. */
function currency(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  // Only the shape is checked: a browser formats any three-letter code, and a list of known codes would refuse one
  // minted after this Node's ICU data.
  if (!/^[A-Za-z]{3}$/.test(raw)) throw new ConfigError('CURRENCY', `expected a three-letter ISO 4217 currency code such as EUR or usd, got "${raw}"`);
  return raw.toUpperCase();
}

/** Returns PUBLIC_URL without trailing slashes; throws `ConfigError` unless it is an http(s) URL without credentials, query or fragment. */
function publicUrl(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('PUBLIC_URL', `expected an http(s) URL such as https://campaigns.example.com, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('PUBLIC_URL', `expected an http or https URL, got "${raw}"`);
  if (url.username || url.password || url.search || url.hash) {
    throw new ConfigError('PUBLIC_URL', `expected an origin with an optional path, without credentials, query or fragment, got "${raw}"`);
  }
  return url.href.replace(/\/+$/, '');
}

/** Returns the retry waits of WEBHOOK_RETRY_SCHEDULE (comma-separated milliseconds), or the default; throws `ConfigError`. */
function retrySchedule(raw: string | undefined): number[] {
  if (raw === undefined) return [...DEFAULT_RETRY_SCHEDULE_MS];
  const parts = raw.split(',').map((part) => part.trim());
  const max = 7 * 24 * 3_600_000;
  if (parts.length > 20 || parts.some((part) => !/^\d+$/.test(part) || Number(part) < 1 || Number(part) > max)) {
    throw new ConfigError(
      'WEBHOOK_RETRY_SCHEDULE',
      `expected up to 20 comma-separated waits in whole milliseconds from 1 to ${max} (e.g. "5000,300000"), got "${raw}"`,
    );
  }
  return parts.map(Number);
}

/** The secret of `TOKEN_SECRET`, checked; undefined when it is not set. */
function configuredSecret(configured: string | undefined): Buffer | undefined {
  if (configured === undefined) return undefined;
  const secret = Buffer.from(configured, 'utf8');
  if (secret.length < 32) throw new ConfigError('TOKEN_SECRET', 'must be at least 32 bytes long');
  return secret;
}

/** The secret from `TOKEN_SECRET`, else the one kept beside the database, created on first start. */
function tokenSecret(configured: string | undefined, databasePath: string): Buffer {
  const given = configuredSecret(configured);
  if (given) return given;
  if (databasePath === ':memory:') return randomBytes(32);
  const file = `${databasePath}.secret`;
  if (existsSync(file)) {
    const stored = readFileSync(file, 'utf8').trim();
    if (!/^(?:[0-9a-f]{2}){32,}$/i.test(stored)) {
      throw new ConfigError('TOKEN_SECRET', `the stored secret in ${file} is not at least 32 bytes of hex; delete it to create a new one`);
    }
    return Buffer.from(stored, 'hex');
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}
