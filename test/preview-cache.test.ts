// Segment counts are remembered per data generation and, for activity bounds, per stretch of time over which they
// cannot change. These tests would fail if a remembered count were served after it went stale: after an import, an
// update, a delete, or a move of the clock. The clock is TestClock's default, 2026-11-20T12:00:00.000Z.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './helpers.ts';

const NOW = '2026-11-20T12:00:00.000Z';
const NOW_MS = Date.parse(NOW);
const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

let serial = 0;
function row(fields: Record<string, unknown> = {}) {
  serial++;
  return {
    name: `Cache ${serial}`,
    email: `cache${serial}@preview.example.com`,
    country: 'Cacheland',
    totalTransactions: 2,
    totalAmountSpent: 50,
    lastActivityDate: iso(NOW_MS - DAY_MS),
    status: 'active',
    ...fields,
  };
}

describe('segment counts are never served stale', () => {
  let service: TestService;
  let token: string;
  const cacheland = [{ field: 'country', operator: 'eq', value: 'Cacheland' }];
  const big = [...cacheland, { field: 'totalAmountSpent', operator: 'gte', value: 100 }];
  const recent = [...cacheland, { field: 'lastActivityDays', operator: 'lte', value: 30 }];

  const preview = async (conditions: unknown[]): Promise<number> => {
    const reply = await service.request('POST', '/v1/segments/preview', { token, body: { conditions } });
    assert.equal(reply.status, 200, reply.text);
    return reply.body.matchCount as number;
  };
  const create = async (fields: Record<string, unknown>): Promise<string> => {
    const reply = await service.request('POST', '/v1/customers', { token, body: row(fields) });
    assert.equal(reply.status, 200, reply.text);
    return reply.body.id as string;
  };

  before(async () => {
    service = await startService({ env: { ACCESS_TOKEN_TTL: '86400' } });
    token = await service.tokenFor('marketing_lead');
  });
  after(() => service.close());

  test('an import changes the next preview of the same conditions', async () => {
    await create({ totalAmountSpent: 150 });
    assert.equal(await preview(big), 1);
    assert.equal(await preview(big), 1); // now remembered
    const reply = await service.request('POST', '/v1/customers/import', {
      token,
      body: { customers: [row({ totalAmountSpent: 100 }), row({ totalAmountSpent: 99.99 }), row({ totalAmountSpent: 1000 })] },
    });
    assert.deepEqual(reply.body, { imported: 3, updated: 0, skipped: 0, failures: [] });
    assert.equal(await preview(big), 3);
  });

  test('an update and a delete change the next preview of the same conditions', async () => {
    const id = await create({ totalAmountSpent: 500 });
    const before = await preview(big);
    assert.equal(await preview(big), before);
    const patched = await service.request('PATCH', `/v1/customers/${id}`, { token, body: { totalAmountSpent: 1 } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(await preview(big), before - 1);
    const moved = await service.request('PATCH', `/v1/customers/${id}`, { token, body: { totalAmountSpent: 200, country: 'Elsewhere' } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(await preview(big), before - 1);
    const back = await service.request('PATCH', `/v1/customers/${id}`, { token, body: { country: 'cacheland' } });
    assert.equal(back.status, 200, back.text);
    assert.equal(await preview(big), before);
    assert.equal((await service.request('DELETE', `/v1/customers/${id}`, { token })).status, 200);
    assert.equal(await preview(big), before - 1);
  });

  test('a lastActivityDays preview changes when the clock moves a day, and at the exact millisecond a row crosses', async () => {
    // One customer exactly 30 days back (included by lte 30), one 30.5 days back (excluded), one 2 days back.
    const region = [{ field: 'country', operator: 'eq', value: 'Driftland' }];
    const within = [...region, { field: 'lastActivityDays', operator: 'lte', value: 30 }];
    const older = [...region, { field: 'lastActivityDays', operator: 'gt', value: 30 }];
    await create({ country: 'Driftland', lastActivityDate: iso(NOW_MS - 30 * DAY_MS) });
    await create({ country: 'Driftland', lastActivityDate: iso(NOW_MS - 30.5 * DAY_MS) });
    await create({ country: 'Driftland', lastActivityDate: iso(NOW_MS - 2 * DAY_MS) });
    try {
      assert.equal(await preview(within), 2);
      assert.equal(await preview(older), 1);
      service.clock.advance(60_000);
      assert.equal(await preview(within), 1, 'a minute later the 30-day-old customer is out');
      assert.equal(await preview(older), 2);
      service.clock.set(NOW);
      assert.equal(await preview(within), 2, 'the clock went back');
      service.clock.advance(1);
      assert.equal(await preview(within), 1, 'one millisecond later the boundary passed that customer');
      service.clock.advance(DAY_MS);
      token = await service.tokenFor('marketing_lead');
      assert.equal(await preview(within), 1, 'a day later the 2-day-old customer is 3 days old');
      service.clock.advance(27 * DAY_MS - 2);
      token = await service.tokenFor('marketing_lead');
      assert.equal(await preview(within), 1, 'it is now 30 days less 1 ms old');
      service.clock.advance(1);
      assert.equal(await preview(within), 1, 'exactly 30 days: still within lte 30');
      service.clock.advance(1);
      assert.equal(await preview(within), 0);
      assert.equal(await preview(older), 3);
    } finally {
      service.clock.set(NOW);
      token = await service.tokenFor('marketing_lead');
    }
  });

  test('a remembered recent-activity count equals what a saved segment stores', async () => {
    const counted = await preview(recent);
    assert.equal(await preview(recent), counted);
    const saved = await service.request('POST', '/v1/segments', { token, body: { name: 'Recent cache', conditions: recent } });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.matchCount, counted);
    const naive = await service.queryValue("SELECT count(*) FROM customers WHERE country_key = 'cacheland' AND last_activity_at >= ?", NOW_MS - 30 * DAY_MS);
    assert.equal(counted, naive);
  });
});
