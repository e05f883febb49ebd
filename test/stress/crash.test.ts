// kill -9 at random moments: in the middle of imports (with edits and deletes alongside), of a seed, and of a
// burst of segment saves. After each restart a separate connection checks the file, and the restarted service
// must agree with it: KPIs, list totals, search and segment previews (the in-memory audience index).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { prng } from '../../scripts/synthetic-customers.ts';
import { CUSTOMER_STATUSES } from '../../src/domain/customers.ts';
import { NUMERIC_OPERATORS, type Condition } from '../../src/domain/segments.ts';
import { call, launchService, signInAdmin, spawnScript, type ChildService } from './child-service.ts';
import { importBatch } from './import-batches.ts';
import {
  assertAggregatesMatchRows,
  assertCustomerRowsComplete,
  assertCustomersConsistent,
  assertSearchIndexMatchesRows,
  assertSqliteIntact,
  countByConditions,
  openReadOnly,
} from './store-invariants.ts';
import { tempDir } from '../support/temp-dir.ts';

const dir = tempDir('campaigns-crash-');

const SEED = Number(process.env.STRESS_SEED ?? 20261120);
const random = prng(SEED);
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
const diag = (text: string) => process.stderr.write(`# ${text}\n`);

/** Conditions whose SQL twins are checked against the service's preview after each restart. */
const PROBES: Condition[][] = [
  [{ field: 'country', operator: 'eq', value: 'germany' }],
  [
    { field: 'totalAmountSpent', operator: 'gte', value: 2500 },
    { field: 'totalTransactions', operator: 'lt', value: 20 },
  ],
  [
    { field: 'country', operator: 'eq', value: ' éIRE ' },
    { field: 'lastActivityDays', operator: 'lte', value: 365 },
    { field: 'totalAmountSpent', operator: 'lt', value: 1000 },
  ],
  [{ field: 'lastActivityDays', operator: 'gt', value: 20000 }], // only the customers from before 1971
];

/** Asserts that the running service's answers agree with the rows in the file at `path`. */
async function assertServiceAgrees(service: ChildService, token: string, path: string): Promise<void> {
  const db = openReadOnly(path);
  try {
    const kpis = await call(service.url, 'GET', '/v1/customers/kpis', { token });
    assert.equal(kpis.status, 200);
    const byStatus = Object.fromEntries(CUSTOMER_STATUSES.map((s) => [s, 0])) as Record<string, number>;
    let cents = 0;
    for (const row of db.prepare('SELECT status, count(*) AS n, sum(amount_cents) AS c FROM customers GROUP BY status').all() as { status: string; n: number; c: number }[]) {
      byStatus[row.status] = row.n;
      cents += row.c;
    }
    const total = byStatus.active! + byStatus.inactive! + byStatus.churned!;
    assert.deepEqual(
      { total: kpis.body.totalCustomers, active: kpis.body.activeCustomers, value: Math.round(kpis.body.totalTransactionValue * 100), counts: kpis.body.statusCounts },
      { total, active: byStatus.active, value: cents, counts: byStatus },
      'GET /v1/customers/kpis against the rows',
    );

    const country = await call(service.url, 'GET', `/v1/customers?country=${encodeURIComponent('ÖSTERREICH')}&status=churned&limit=1`, { token });
    assert.equal(country.body.total, db.prepare(`SELECT count(*) FROM customers WHERE country_key = 'österreich' AND status = 'churned'`).pluck().get());

    for (const conditions of PROBES) {
      // The service counts at its own "now": take the SQL count before and after, and retry if a day boundary moved it.
      for (let attempt = 0; ; attempt++) {
        const before = countByConditions(db, conditions, Date.now());
        const preview = await call(service.url, 'POST', '/v1/segments/preview', { token, body: { conditions } });
        const afterwards = countByConditions(db, conditions, Date.now());
        if (before !== afterwards && attempt < 3) continue;
        assert.equal(preview.status, 200);
        assert.equal(preview.body.matchCount, before, `preview of ${JSON.stringify(conditions)} against SQL`);
        break;
      }
    }

    const picks = db.prepare('SELECT id, email FROM customers ORDER BY (id * 7919) % 10007 LIMIT 3').all() as { id: number; email: string }[];
    for (const { id, email } of picks) {
      const found = await call(service.url, 'GET', `/v1/customers?search=${encodeURIComponent(email)}`, { token });
      assert.deepEqual(
        found.body.items.map((c: { id: string }) => c.id),
        [String(id)],
        `searching for ${email}`,
      );
    }
  } finally {
    db.close();
  }
}

/** Which import batches were sent, and what the service acknowledged for each. */
interface Ledger {
  sent: Set<number>;
  acknowledged: Map<number, number>;
  /** Batches once seen stored: they must stay. */
  seen: Set<number>;
}

/** Asserts that each batch is stored whole or not at all, acknowledged ones whole, and rows hold what was sent. */
function assertBatchesAllOrNothing(path: string, ledger: Ledger): { whole: number; absent: number } {
  const db = openReadOnly(path);
  try {
    const perDomain = db
      .prepare(`SELECT substr(email, instr(email, '@') + 1) AS domain, count(*) AS n FROM customers WHERE email LIKE '%.crash.test' GROUP BY domain`)
      .all() as { domain: string; n: number }[];
    const stored = new Map<number, number>();
    for (const { domain, n } of perDomain) {
      const match = /^b(\d+)\.crash\.test$/.exec(domain);
      if (match) stored.set(Number(match[1]), n);
    }
    const rowsOf = db.prepare('SELECT name, email, country, country_key, total_transactions, amount_cents, last_activity_at, status FROM customers WHERE email LIKE ?');
    let whole = 0;
    for (const number of ledger.sent) {
      const batch = importBatch(number);
      const n = stored.get(number) ?? 0;
      stored.delete(number);
      if (ledger.acknowledged.has(number)) {
        assert.equal(ledger.acknowledged.get(number), batch.valid.size, `batch ${number}: the service reported what the batch holds`);
        assert.equal(n, batch.valid.size, `batch ${number} was acknowledged: all ${batch.valid.size} rows stored`);
      } else if (ledger.seen.has(number)) {
        assert.equal(n, batch.valid.size, `batch ${number} was stored before: still all ${batch.valid.size} rows`);
      } else {
        assert.ok(n === 0 || n === batch.valid.size, `batch ${number} unacknowledged: ${n} rows stored, expected 0 or ${batch.valid.size}`);
      }
      if (n === 0) continue;
      whole++;
      ledger.seen.add(number);
      for (const row of rowsOf.all(`%@${batch.domain}`) as { email: string }[]) {
        assert.deepEqual(row, batch.valid.get(row.email), `batch ${number}: stored row ${row.email} holds what was sent`);
      }
    }
    assert.deepEqual([...stored.keys()], [], 'batches stored that were never sent');
    return { whole, absent: ledger.sent.size - whole };
  } finally {
    db.close();
  }
}

/** Edits, deletes and creates customers of the mutable domain until `stopped()`; resolves when the service goes away. */
async function mutate(url: string, token: string, ids: number[], stopped: () => boolean, serial: { next: number }): Promise<void> {
  for (let i = 0; i < 200 && !stopped() && ids.length > 0; i++) {
    const pick = Math.floor(random() * ids.length);
    const id = ids[pick]!;
    const roll = random();
    try {
      if (roll < 0.5) {
        const changes = {
          status: CUSTOMER_STATUSES[between(0, 2)],
          totalAmountSpent: between(0, 900_000) / 100,
          lastActivityDate: new Date(Date.now() - between(0, 900) * 86_400_000).toISOString(),
          country: random() < 0.5 ? 'Sverige' : 'germany',
          ...(random() < 0.3 ? { name: `Mutable ${id} v${i}` } : {}), // a new name moves the search entry too
        };
        await call(url, 'PATCH', `/v1/customers/${id}`, { token, body: changes });
      } else if (roll < 0.8) {
        ids.splice(pick, 1);
        await call(url, 'DELETE', `/v1/customers/${id}`, { token });
      } else {
        const n = serial.next++;
        await call(url, 'POST', '/v1/customers', {
          token,
          body: { name: `Mutable new ${n}`, email: `new${n}@mutable.crash.test`, country: 'Portugal', totalTransactions: 1, totalAmountSpent: 12.5, lastActivityDate: '2026-01-01', status: 'active' },
        });
      }
    } catch {
      return; // killed
    }
  }
}

/** Waits for the first line on the child's stderr that matches. */
function stderrLine(child: ReturnType<typeof spawnScript>, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text)) {
        child.stderr.off('data', onData);
        resolve();
      }
    };
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited (${code}) before ${pattern}: ${text}`)));
  });
}

const mainDb = join(dir, 'imports.db');
let mainToken = '';

test('kill -9 during imports, edits and deletes: every batch whole or absent, aggregates, search and the audience index match the rows', async () => {
  let service = await launchService({ DATABASE_PATH: mainDb });
  mainToken = await signInAdmin(service.url); // the token secret lives beside the database: tokens survive restarts
  const ledger: Ledger = { sent: new Set(), acknowledged: new Map(), seen: new Set() };
  const mutable = { rows: 300, serial: { next: 1 } };
  const seedRows = Array.from({ length: mutable.rows }, (_, i) => ({
    name: `Mutable ${i}`,
    email: `m${i}@mutable.crash.test`,
    country: ['Germany', 'Éire', 'Sverige'][i % 3],
    totalTransactions: i % 17,
    totalAmountSpent: i * 3.25,
    lastActivityDate: new Date(Date.now() - (i % 400) * 86_400_000).toISOString().slice(0, 10),
    status: CUSTOMER_STATUSES[i % 3],
  }));
  const seeded = await call(service.url, 'POST', '/v1/customers/import', { token: mainToken, body: { customers: seedRows } });
  assert.equal(seeded.body.imported, mutable.rows);

  let nextBatch = 1;
  for (let round = 1; round <= 5; round++) {
    const db = openReadOnly(mainDb);
    const mutableIds = db.prepare(`SELECT id FROM customers WHERE email LIKE '%@mutable.crash.test'`).pluck().all() as number[];
    db.close();

    const byTime = random() < 0.5;
    const killAfterMs = between(40, 1200);
    const killAfterResponses = between(1, 12);
    const clients = between(2, 5);
    let killed = false;
    let responses = 0;
    const kill = () => {
      if (killed) return;
      killed = true;
      void service.kill();
    };
    const timer = byTime ? setTimeout(kill, killAfterMs) : undefined;
    const importer = async () => {
      for (let sent = 0; sent < 15 && !killed; sent++) {
        const batch = importBatch(nextBatch++);
        ledger.sent.add(batch.number);
        let reply;
        try {
          reply = await call(service.url, 'POST', '/v1/customers/import', { token: mainToken, body: { customers: batch.rows } });
        } catch {
          return; // the process is gone; the batch's fate is what the file says
        }
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        ledger.acknowledged.set(batch.number, reply.body.imported);
        if (!byTime && ++responses >= killAfterResponses) kill();
      }
    };
    await Promise.all([...Array.from({ length: clients }, importer), mutate(service.url, mainToken, mutableIds, () => killed, mutable.serial)]);
    clearTimeout(timer);
    kill(); // every loop ended before its moment came: kill now
    const exit = await service.exited;
    assert.equal(exit.signal, 'SIGKILL');

    service = await launchService({ DATABASE_PATH: mainDb });
    const customers = assertCustomersConsistent(mainDb);
    const batches = assertBatchesAllOrNothing(mainDb, ledger);
    await assertServiceAgrees(service, mainToken, mainDb);
    diag(
      `round ${round}: killed ${byTime ? `after ${killAfterMs} ms` : `after ${killAfterResponses} responses`} with ${clients} importers; ` +
        `${batches.whole} batches stored, ${batches.absent} lost in flight, ${ledger.acknowledged.size} acknowledged; ${customers} customers`,
    );
  }
  await service.stop();
  assert.ok(ledger.acknowledged.size > 0, 'some imports were answered before the kills');
});

test('kill -9 during a burst of segment saves: every stored segment is complete, acknowledged ones are kept, counts match SQL', async () => {
  let service = await launchService({ DATABASE_PATH: mainDb });
  const countries = ['Germany', ' france ', 'éire', 'Nowhere'];
  const makeConditions = (): Condition[] => {
    const list: Condition[] = [];
    for (let i = between(1, 10); i > 0; i--) {
      const kind = between(0, 2);
      if (kind === 0) list.push({ field: 'country', operator: 'eq', value: countries[between(0, countries.length - 1)]! });
      else list.push({ field: kind === 1 ? 'totalTransactions' : 'totalAmountSpent', operator: NUMERIC_OPERATORS[between(0, 3)]!, value: between(0, 4000) });
    }
    return list;
  };
  const acknowledged = new Map<string, { name: string; conditions: unknown; matchCount: number }>();
  for (let round = 1; round <= 2; round++) {
    let killed = false;
    let responses = 0;
    const killAfterResponses = between(5, 60);
    const timer = setTimeout(() => {
      killed = true;
      void service.kill();
    }, between(100, 800));
    const saver = async (client: number) => {
      for (let i = 0; i < 100 && !killed; i++) {
        const body = { name: `  Burst ${round}.${client}.${i} — «ü» `, conditions: makeConditions() };
        let reply;
        try {
          reply = await call(service.url, 'POST', '/v1/segments', { token: mainToken, body });
        } catch {
          return;
        }
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        acknowledged.set(reply.body.id, { name: reply.body.name, conditions: reply.body.conditions, matchCount: reply.body.matchCount });
        if (++responses >= killAfterResponses && !killed) {
          killed = true;
          void service.kill();
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, client) => saver(client)));
    clearTimeout(timer);
    killed = true;
    await service.kill();
    service = await launchService({ DATABASE_PATH: mainDb });

    const db = openReadOnly(mainDb);
    try {
      assertSqliteIntact(db);
      const adminId = db.prepare(`SELECT id FROM users WHERE email = 'admin@example.com'`).pluck().get();
      const rows = db.prepare('SELECT * FROM segments').all() as Record<string, unknown>[];
      for (const row of rows) {
        assert.match(String(row.id), /^[0-9a-f-]{36}$/);
        assert.equal(typeof row.name, 'string');
        assert.match(row.name as string, /^Burst \d\.\d\.\d+ — «ü»$/, 'the name, trimmed and whole');
        assert.equal(row.created_by, adminId);
        assert.ok(Number.isSafeInteger(row.created_at) && row.updated_at === row.created_at, 'timestamps');
        assert.ok(Number.isSafeInteger(row.match_count) && (row.match_count as number) >= 0, 'match count');
        const conditions = JSON.parse(row.conditions as string) as (Condition & { id: string })[];
        assert.ok(Array.isArray(conditions) && conditions.length >= 1 && conditions.length <= 10, 'one to ten conditions');
        for (const c of conditions) {
          assert.match(c.id, /^cnd_[\w-]{8}$/);
          if (c.field === 'country') assert.ok(c.operator === 'eq' && typeof c.value === 'string' && c.value === c.value.trim());
          else assert.ok(['gt', 'gte', 'lt', 'lte'].includes(c.operator) && Number.isFinite(c.value));
        }
        // Customers did not change during the burst and no condition depends on the time: the stored count is exact.
        assert.equal(row.match_count, countByConditions(db, conditions, Date.now()), `stored count of segment ${row.id as string}`);
        const known = acknowledged.get(row.id as string);
        if (known) assert.deepEqual({ name: row.name, conditions, matchCount: row.match_count }, known, 'an acknowledged segment as answered');
      }
      const stored = new Set(rows.map((r) => r.id));
      for (const id of acknowledged.keys()) assert.ok(stored.has(id), `acknowledged segment ${id} survived the kill`);
      const listed = await call(service.url, 'GET', '/v1/segments', { token: mainToken });
      assert.equal(listed.body.length, rows.length);
      diag(`segment burst ${round}: ${acknowledged.size} acknowledged, ${rows.length} stored`);
    } finally {
      db.close();
    }
  }
  await assertServiceAgrees(service, mainToken, mainDb);
  await service.stop();
});

/**
 * Runs `scripts/seed.ts` into `path` and kills it a random moment after its first progress line (the first
 * 50,000 rows committed); returns once it is gone.
 */
async function killSeedMidway(path: string, customers: number): Promise<number> {
  const seed = spawnScript('scripts/seed.ts', ['--customers', String(customers), '--database', path, '--seed', String(SEED)]);
  const exited = new Promise<NodeJS.Signals | null>((resolve) => seed.once('exit', (_code, signal) => resolve(signal)));
  await stderrLine(seed, /seeding: [\d,]+ \//);
  const delay = between(0, 250);
  await new Promise((resolve) => setTimeout(resolve, delay));
  seed.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL', 'the seed was still running when killed');
  return delay;
}

const seededEmpty = join(dir, 'seed-empty.db');
const seededOnData = join(dir, 'seed-on-data.db');

test('kill -9 during a seed: the file stays intact, rows are complete, and the service restarts with every customer index', async () => {
  const delay = await killSeedMidway(seededEmpty, 200_000);
  // A second database that already holds customers: the seed then keeps the indexes and appends.
  const small = spawnScript('scripts/seed.ts', ['--customers', '2000', '--database', seededOnData]);
  assert.equal(await new Promise((resolve) => small.once('exit', resolve)), 0);
  await killSeedMidway(seededOnData, 200_000);

  for (const path of [seededEmpty, seededOnData]) {
    const service = await launchService({ DATABASE_PATH: path });
    try {
      const db = openReadOnly(path);
      try {
        assertSqliteIntact(db);
        assertCustomerRowsComplete(db);
        // The seed drops the customer indexes into an empty table; opening the database puts them back.
        const indexes = db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'customers' AND sql IS NOT NULL ORDER BY name`).pluck().all();
        assert.deepEqual(indexes, ['customers_by_activity', 'customers_by_amount', 'customers_by_country', 'customers_by_email', 'customers_by_name', 'customers_by_transactions']);
        diag(`${path.endsWith('empty.db') ? `seed into an empty database killed ${delay} ms after its first progress line` : 'seed onto 2,000 customers killed'}: ${db.prepare('SELECT count(*) FROM customers').pluck().get()} rows kept`);
      } finally {
        db.close();
      }
      const token = await signInAdmin(service.url);
      assert.equal((await call(service.url, 'GET', '/health')).status, 200);
      assert.equal((await call(service.url, 'GET', '/v1/customers/kpis', { token })).status, 200);
    } finally {
      await service.stop();
    }
  }
});

// The restart in the test above repaired the interrupted load (openDatabase finishes its search index and aggregates).
test(
  'kill -9 during a seed: after a restart the aggregates and search index match the rows, and the service agrees',
  async () => {
    for (const path of [seededEmpty, seededOnData]) {
      const db = openReadOnly(path);
      try {
        assertAggregatesMatchRows(db);
        assertSearchIndexMatchesRows(db);
      } finally {
        db.close();
      }
      const service = await launchService({ DATABASE_PATH: path });
      try {
        await assertServiceAgrees(service, await signInAdmin(service.url), path);
      } finally {
        await service.stop();
      }
    }
  },
);
