// Configuration from environment variables (product.md section 1): each bad value names its variable.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertProblem, startService } from './helpers.ts';
import { tempDir } from './support/temp-dir.ts';
import { ConfigError, loadConfig, type Config } from '../src/config.ts';

const SECRET = 's'.repeat(32);


function assertConfigError(env: Record<string, string>, variable: string, base: Record<string, string> = { DATABASE_PATH: join(tempDir(), 'config.db') }): void {
  assert.throws(
    () => loadConfig({ ...base, TOKEN_SECRET: SECRET, ...env }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
      assert.match(error.message, new RegExp(`^${variable}\\b`), error.message);
      return true;
    },
  );
}

test('config: PORT that is not a number is a ConfigError naming PORT', () => {
  assertConfigError({ PORT: 'abc' }, 'PORT');
  assertConfigError({ PORT: '65536' }, 'PORT');
});

test('config: an unknown LOG_LEVEL is a ConfigError naming LOG_LEVEL', () => {
  assertConfigError({ LOG_LEVEL: 'loud' }, 'LOG_LEVEL');
});

test('config: a TOKEN_SECRET shorter than 32 bytes is a ConfigError naming TOKEN_SECRET', () => {
  assertConfigError({ TOKEN_SECRET: 'x'.repeat(31) }, 'TOKEN_SECRET');
  assert.equal(loadConfig({ DATABASE_PATH: join(tempDir(), 'ok.db'), TOKEN_SECRET: 'x'.repeat(32) }).tokenSecret?.length, 32);
});

test('config: DATABASE_URL names PostgreSQL; another scheme, or DATABASE_PATH set too, is a ConfigError naming DATABASE_URL', () => {
  const url = 'postgres://campaigns:pw@db1:5432,db2:5432/campaigns?target_session_attrs=read-write';
  const config = loadConfig({ DATABASE_URL: url });
  assert.equal(config.databaseUrl, url, 'libpq syntax (several hosts, parameters) passed on as given');
  assert.equal(config.tokenSecret, undefined, 'without TOKEN_SECRET the secret is kept in the database');
  assert.equal(loadConfig({ DATABASE_URL: 'postgresql://db/campaigns', TOKEN_SECRET: SECRET }).tokenSecret?.toString(), SECRET);
  assertConfigError({ DATABASE_URL: 'mysql://db/campaigns' }, 'DATABASE_URL', {});
  assertConfigError({ DATABASE_URL: 'db.example.com' }, 'DATABASE_URL', {});
  assertConfigError({ DATABASE_URL: url, DATABASE_PATH: './data/campaigns.db' }, 'DATABASE_URL', {});
  assertConfigError({ DATABASE_URL: url, BACKUP_DIR: tempDir() }, 'BACKUP_DIR', {});
  assert.equal(loadConfig({ DATABASE_PATH: join(tempDir(), 'x.db'), TOKEN_SECRET: SECRET }).databaseUrl, undefined);
});

test('config: ACCESS_TOKEN_TTL of 0 is a ConfigError naming ACCESS_TOKEN_TTL', () => {
  assertConfigError({ ACCESS_TOKEN_TTL: '0' }, 'ACCESS_TOKEN_TTL');
});

test('config: HEADERS_TIMEOUT_MS longer than REQUEST_TIMEOUT_MS, or not a number, is a ConfigError naming it', () => {
  assertConfigError({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '4000' }, 'HEADERS_TIMEOUT_MS');
  assertConfigError({ HEADERS_TIMEOUT_MS: '2s' }, 'HEADERS_TIMEOUT_MS');
  assertConfigError({ REQUEST_TIMEOUT_MS: '0' }, 'REQUEST_TIMEOUT_MS');
});

test('config: the defaults are those of the product decisions', () => {
  const config = loadConfig({ DATABASE_PATH: join(tempDir(), 'defaults.db'), TOKEN_SECRET: SECRET });
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.accessTokenTtlSeconds, 900);
  assert.equal(config.refreshTokenTtlSeconds, 604_800);
  assert.equal(config.logLevel, 'info');
  assert.deepEqual(config.corsOrigins, []);
  assert.equal(config.llm.provider, 'local');
  assert.equal(config.headersTimeoutMs, 10_000);
  assert.equal(config.requestTimeoutMs, 60_000);
});

test('config: without TOKEN_SECRET a secret is created beside the database with mode 0600 and reused', () => {
  const databasePath = join(tempDir(), 'nested', 'folder', 'campaigns.db');
  const secretFile = `${databasePath}.secret`;
  assert.equal(existsSync(secretFile), false);

  const first = loadConfig({ DATABASE_PATH: databasePath }) as Config & { tokenSecret: Buffer };
  assert.ok(existsSync(secretFile), 'the secret file was not created');
  assert.equal(statSync(secretFile).mode & 0o777, 0o600);
  assert.ok(first.tokenSecret.length >= 32, `secret of ${first.tokenSecret.length} bytes`);

  const second = loadConfig({ DATABASE_PATH: databasePath }) as Config & { tokenSecret: Buffer };
  assert.ok(second.tokenSecret.equals(first.tokenSecret), 'a second start uses another secret');
  assert.equal(statSync(secretFile).mode & 0o777, 0o600);

  const elsewhere = loadConfig({ DATABASE_PATH: join(tempDir(), 'other.db') }) as Config & { tokenSecret: Buffer };
  assert.ok(!elsewhere.tokenSecret.equals(first.tokenSecret), 'two databases share a secret');
});


test('config: a stored secret that is not at least 32 bytes of hex stops start-up naming TOKEN_SECRET', () => {
  const folder = mkdtempSync(join(tmpdir(), 'campaigns-secret-'));
  try {
    for (const stored of ['z'.repeat(64), 'ab'.repeat(31), '']) {
      const databasePath = join(folder, 'x.db');
      writeFileSync(`${databasePath}.secret`, stored);
      assert.throws(() => loadConfig({ DATABASE_PATH: databasePath }), (error: unknown) => {
        return error instanceof ConfigError && error.message.startsWith('TOKEN_SECRET:');
      });
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('config: WEBHOOK_RETRY_SCHEDULE is comma-separated whole milliseconds; the default is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
  const load = (env: Record<string, string>) => loadConfig({ DATABASE_PATH: join(tempDir(), 'hooks.db'), TOKEN_SECRET: SECRET, ...env });
  assert.deepEqual(load({}).webhooks.retryScheduleMs, [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
  assert.deepEqual(load({ WEBHOOK_RETRY_SCHEDULE: '200,200' }).webhooks.retryScheduleMs, [200, 200]);
  assert.deepEqual(load({ WEBHOOK_RETRY_SCHEDULE: ' 1000 , 60000 ' }).webhooks.retryScheduleMs, [1_000, 60_000]);
  for (const bad of ['5s', '200,,200', '0', '-1', '1.5', '200;200', '700000000', Array(21).fill('1').join(',')]) {
    assertConfigError({ WEBHOOK_RETRY_SCHEDULE: bad }, 'WEBHOOK_RETRY_SCHEDULE');
  }
});

test('config: WEBHOOK_TIMEOUT_MS defaults to 10 s and must be 100 ms to 60 s', () => {
  assert.equal(loadConfig({ DATABASE_PATH: join(tempDir(), 'hooks.db'), TOKEN_SECRET: SECRET }).webhooks.timeoutMs, 10_000);
  assertConfigError({ WEBHOOK_TIMEOUT_MS: '99' }, 'WEBHOOK_TIMEOUT_MS');
  assertConfigError({ WEBHOOK_TIMEOUT_MS: '10s' }, 'WEBHOOK_TIMEOUT_MS');
});

test('config: INSTANCE_LEASE_MS and INSTANCE_HEARTBEAT_MS default to 10 s and 2 s; a heartbeat slower than half the lease is refused', () => {
  const dir = tempDir();
  assert.deepEqual(loadConfig({ DATABASE_PATH: join(dir, 'a.db'), TOKEN_SECRET: SECRET }).instances, { leaseMs: 10_000, heartbeatMs: 2_000 });
  assert.deepEqual(loadConfig({ DATABASE_PATH: join(dir, 'b.db'), TOKEN_SECRET: SECRET, INSTANCE_LEASE_MS: '600', INSTANCE_HEARTBEAT_MS: '300' }).instances, { leaseMs: 600, heartbeatMs: 300 });
  assertConfigError({ INSTANCE_LEASE_MS: '1000', INSTANCE_HEARTBEAT_MS: '501' }, 'INSTANCE_HEARTBEAT_MS');
  assertConfigError({ INSTANCE_LEASE_MS: '99' }, 'INSTANCE_LEASE_MS');
  assertConfigError({ INSTANCE_HEARTBEAT_MS: '2s' }, 'INSTANCE_HEARTBEAT_MS');
});

test('config: TRUSTED_PROXIES is a comma-separated list of IP addresses, empty by default', () => {
  const dir = tempDir();
  assert.deepEqual(loadConfig({ DATABASE_PATH: join(dir, 'a.db'), TOKEN_SECRET: SECRET }).trustedProxies, []);
  assert.deepEqual(loadConfig({ DATABASE_PATH: join(dir, 'b.db'), TOKEN_SECRET: SECRET, TRUSTED_PROXIES: ' 10.0.0.2, ::1 ' }).trustedProxies, ['10.0.0.2', '::1']);
  assertConfigError({ TRUSTED_PROXIES: '10.0.0.0/8' }, 'TRUSTED_PROXIES');
  assertConfigError({ TRUSTED_PROXIES: 'proxy.internal' }, 'TRUSTED_PROXIES');
});

test('config: PUBLIC_URL is an http(s) origin with an optional path, kept without trailing slashes; unset by default', () => {
  const load = (env: Record<string, string>) => loadConfig({ DATABASE_PATH: join(tempDir(), 'hooks.db'), TOKEN_SECRET: SECRET, ...env });
  assert.equal(load({}).publicUrl, undefined);
  assert.equal(load({ PUBLIC_URL: 'https://Campaigns.Example.com/' }).publicUrl, 'https://campaigns.example.com');
  assert.equal(load({ PUBLIC_URL: 'https://example.com/campaigns//' }).publicUrl, 'https://example.com/campaigns');
  for (const bad of ['campaigns.example.com', 'ftp://example.com', 'https://user:pw@example.com', 'https://example.com/?a=1', 'https://example.com/#top']) {
    assertConfigError({ PUBLIC_URL: bad }, 'PUBLIC_URL');
  }
});

test('config: CURRENCY is a three-letter ISO 4217 code, upper-cased (eur is EUR); unset by default; anything else stops start-up naming CURRENCY', () => {
  const load = (env: Record<string, string>) => loadConfig({ DATABASE_PATH: join(tempDir(), 'money.db'), TOKEN_SECRET: SECRET, ...env });
  assert.equal(load({}).currency, undefined);
  assert.equal(load({ CURRENCY: 'EUR' }).currency, 'EUR');
  assert.equal(load({ CURRENCY: ' eur ' }).currency, 'EUR');
  assert.equal(load({ CURRENCY: 'Kes' }).currency, 'KES');
  for (const bad of ['EURO', 'EU', '€', 'E1R', 'US$', 'EUR,USD']) assertConfigError({ CURRENCY: bad }, 'CURRENCY');
});

test('config: GET /v1/settings tells a signed-in client the CURRENCY (null when unset) and is documented', async () => {
  const withCurrency = await startService({ env: { CURRENCY: 'eur' } });
  const without = await startService();
  try {
    const token = await withCurrency.tokenFor('lifecycle_marketer');
    const reply = await withCurrency.request('GET', '/v1/settings', { token });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { currency: 'EUR' });
    assert.deepEqual((await without.request('GET', '/v1/settings', { token: await without.tokenFor('admin') })).body, { currency: null });
    assertProblem(await withCurrency.request('GET', '/v1/settings'), 401, 'unauthenticated');
    const doc = (await withCurrency.request('GET', '/v1/openapi.json')).body;
    assert.equal(doc.paths['/v1/settings'].get.operationId, 'system.settings');
  } finally {
    await withCurrency.close();
    await without.close();
  }
});
