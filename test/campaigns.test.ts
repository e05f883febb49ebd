// Campaigns over HTTP with the local generator (product.md sections 2 and 6): the campaign object, validation of the
// generation request, the list with its filters, paging and query validation, campaigns outliving their segment,
// and the machine description of the seven operations.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { audienceOf, briefFor, CAMPAIGN_KEYS, campaignTotal, generate, generateOk, NO_RATE_LIMIT, OBJECTIVE, type Campaign } from './support/campaigns.ts';

let service: TestService;
let token: string;
let userId: string;
let segment: { id: string; name: string };

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  const user = await service.createUser('lifecycle_marketer');
  userId = user.id;
  token = (await service.signIn(user.email)).accessToken;
  segment = await audienceOf(service, token, 2);
});
after(() => service.close());

describe('the campaign object', () => {
  test('generation answers exactly the fourteen fields: a draft by the local generator, created by the caller', async () => {
    const campaign = await generateOk(service, token, briefFor(segment.id, { channel: 'email', tone: 'professional' }));
    assert.deepEqual(Object.keys(campaign).sort(), CAMPAIGN_KEYS);
    const now = service.clock.now().toISOString();
    assert.deepEqual(
      { ...campaign, id: undefined, title: undefined, message: undefined, callToAction: undefined },
      {
        id: undefined,
        segmentId: segment.id,
        segmentName: segment.name,
        objective: OBJECTIVE,
        channel: 'email',
        tone: 'professional',
        title: undefined,
        message: undefined,
        callToAction: undefined,
        status: 'draft',
        model: 'local',
        createdBy: userId,
        createdAt: now,
        updatedAt: now,
      },
    );
    assert.match(campaign.id, /^\S+$/);
  });

  test('GET /v1/campaigns/{id} returns the same object as generation did', async () => {
    const campaign = await generateOk(service, token, briefFor(segment.id));
    const reply = await service.request('GET', `/v1/campaigns/${campaign.id}`, { token });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, campaign);
  });

  test('each generation creates a new campaign with its own id', async () => {
    const first = await generateOk(service, token, briefFor(segment.id));
    const second = await generateOk(service, token, briefFor(segment.id));
    assert.notEqual(first.id, second.id);
  });

  test('unknown body properties are ignored: id, status, model and createdBy cannot be chosen', async () => {
    const campaign = await generateOk(service, token, { ...briefFor(segment.id), id: 'mine', status: 'sent', model: 'gpt-9', createdBy: 'someone' } as never);
    assert.notEqual(campaign.id, 'mine');
    assert.equal(campaign.status, 'draft');
    assert.equal(campaign.model, 'local');
    assert.equal(campaign.createdBy, userId);
  });

  test('the objective is stored trimmed', async () => {
    const campaign = await generateOk(service, token, briefFor(segment.id, { objective: `  \n ${OBJECTIVE} \t ` }));
    assert.equal(campaign.objective, OBJECTIVE);
  });

  test('without a token generation is 401 unauthenticated', async () => {
    const reply = await service.request('POST', '/v1/campaigns/generate', { body: briefFor(segment.id) });
    assertProblem(reply, 401, 'unauthenticated');
  });
});

describe('generation request validation: 400 naming the field, nothing created', () => {
  const cases: [string, (segmentId: string) => unknown, string[]][] = [
    ['segmentId missing', (id) => ({ ...briefFor(id), segmentId: undefined }), ['segmentId']],
    ['segmentId a number', () => ({ ...briefFor('x'), segmentId: 42 }), ['segmentId']],
    ['segmentId empty', () => briefFor(''), ['segmentId']],
    ['segmentId of no saved segment', () => briefFor('no-such-segment'), ['segmentId']],
    ['segmentId a segment name', () => briefFor(segment.name), ['segmentId']],
    ['objective missing', (id) => ({ ...briefFor(id), objective: undefined }), ['objective']],
    ['objective of 9 characters', (id) => briefFor(id, { objective: 'x'.repeat(9) }), ['objective']],
    ['objective of 9 characters padded with spaces to 15', (id) => briefFor(id, { objective: `   ${'x'.repeat(9)}   ` }), ['objective']],
    ['objective of 601 characters', (id) => briefFor(id, { objective: 'x'.repeat(601) }), ['objective']],
    ['objective a number', (id) => ({ ...briefFor(id), objective: 1234567890123 }), ['objective']],
    ['objective with a control character', (id) => briefFor(id, { objective: 'Reactivate\u0007 lapsed buyers' }), ['objective']],
    ['channel fax', (id) => ({ ...briefFor(id), channel: 'fax' }), ['channel']],
    ['channel missing', (id) => ({ ...briefFor(id), channel: undefined }), ['channel']],
    ['channel in capitals', (id) => ({ ...briefFor(id), channel: 'SMS' }), ['channel']],
    ['tone angry', (id) => ({ ...briefFor(id), tone: 'angry' }), ['tone']],
    ['tone missing', (id) => ({ ...briefFor(id), tone: undefined }), ['tone']],
    ['every field missing', () => ({}), ['segmentId', 'objective', 'channel', 'tone']],
    ['a body that is an array', () => [briefFor('x')], ['body']],
  ];
  for (const [name, body, fields] of cases) {
    test(name, async () => {
      const before = await campaignTotal(service, token);
      assertProblem(await generate(service, token, body(segment.id)), 400, 'validation_failed', fields);
      assert.equal(await campaignTotal(service, token), before);
    });
  }

  test('objectives of exactly 10 and exactly 600 characters (after trimming) are accepted, line breaks too', async () => {
    for (const objective of ['x'.repeat(10), ` ${'y'.repeat(600)} `, 'Line one of the brief.\nLine two of it.']) {
      const campaign = await generateOk(service, token, briefFor(segment.id, { objective }));
      assert.equal(campaign.objective, objective.trim());
    }
  });

  test('every channel and every tone is accepted', async () => {
    for (const channel of ['sms', 'push', 'email'] as const) {
      for (const tone of ['professional', 'friendly', 'urgent', 'promotional'] as const) {
        const campaign = await generateOk(service, token, briefFor(segment.id, { channel, tone }));
        assert.deepEqual([campaign.channel, campaign.tone], [channel, tone]);
      }
    }
  });
});

describe('a deleted segment', () => {
  test('keeps its campaigns with segmentId and segmentName, still found by the segmentId filter', async () => {
    const doomed = await audienceOf(service, token, 1);
    const campaign = await generateOk(service, token, briefFor(doomed.id));
    const removed = await service.request('DELETE', `/v1/segments/${doomed.id}`, { token });
    assert.equal(removed.status, 200, removed.text);
    const reply = await service.request('GET', `/v1/campaigns/${campaign.id}`, { token });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, campaign);
    assert.equal(reply.body.segmentName, doomed.name);
    const list = await service.request('GET', `/v1/campaigns?segmentId=${encodeURIComponent(doomed.id)}`, { token });
    assert.deepEqual(list.body.items.map((c: Campaign) => c.id), [campaign.id]);
  });

  test('cannot be drafted for any more: 400 on segmentId', async () => {
    const doomed = await audienceOf(service, token, 1);
    await service.request('DELETE', `/v1/segments/${doomed.id}`, { token });
    assertProblem(await generate(service, token, briefFor(doomed.id)), 400, 'validation_failed', ['segmentId']);
  });
});

describe('list', () => {
  let listService: TestService;
  let lead: string;
  const ids: Record<string, string> = {};
  let segmentA: string;
  let segmentB: string;
  const list = (query = '') => listService.request('GET', `/v1/campaigns${query}`, { token: lead });
  const idsOf = (items: Campaign[]) => items.map((c) => Object.keys(ids).find((name) => ids[name] === c.id));

  // c1 A sms draft, c2 A email in_review, c3 B push draft, c4 B sms approved, c5 A push sent; created in that order.
  before(async () => {
    listService = await startService({ env: NO_RATE_LIMIT });
    lead = await listService.tokenFor('marketing_lead');
    segmentA = (await audienceOf(listService, lead, 1)).id;
    segmentB = (await audienceOf(listService, lead, 1)).id;
    const plan = [
      ['c1', segmentA, 'sms', []],
      ['c2', segmentA, 'email', ['in_review']],
      ['c3', segmentB, 'push', []],
      ['c4', segmentB, 'sms', ['in_review', 'approved']],
      ['c5', segmentA, 'push', ['in_review', 'approved', 'sent']],
    ] as const;
    for (const [name, segmentId, channel, moves] of plan) {
      listService.clock.advance(1000);
      const campaign = await generateOk(listService, lead, briefFor(segmentId, { channel }));
      ids[name] = campaign.id;
      for (const status of moves) {
        const moved = await listService.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status } });
        assert.equal(moved.status, 200, moved.text);
      }
    }
  });
  after(() => listService.close());

  test('newest first, in the page envelope with the defaults page 1 and limit 50', async () => {
    const reply = await list();
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(Object.keys(reply.body).sort(), ['items', 'limit', 'page', 'total']);
    assert.deepEqual(idsOf(reply.body.items), ['c5', 'c4', 'c3', 'c2', 'c1']);
    assert.deepEqual([reply.body.total, reply.body.page, reply.body.limit], [5, 1, 50]);
    for (const item of reply.body.items) assert.deepEqual(Object.keys(item).sort(), CAMPAIGN_KEYS);
  });

  test('filters by status, channel and segmentId, alone and together', async () => {
    const cases: [string, string[]][] = [
      ['?status=draft', ['c3', 'c1']],
      ['?status=in_review', ['c2']],
      ['?status=approved', ['c4']],
      ['?status=sent', ['c5']],
      ['?channel=sms', ['c4', 'c1']],
      ['?channel=email', ['c2']],
      ['?channel=push', ['c5', 'c3']],
      [`?segmentId=${segmentA}`, ['c5', 'c2', 'c1']],
      [`?segmentId=${segmentB}`, ['c4', 'c3']],
      [`?segmentId=${segmentA}&channel=push`, ['c5']],
      [`?status=draft&channel=sms&segmentId=${segmentA}`, ['c1']],
      ['?status=approved&channel=email', []],
      ['?segmentId=no-such-segment', []],
    ];
    for (const [query, expected] of cases) {
      const reply = await list(query);
      assert.equal(reply.status, 200, `${query}: ${reply.text}`);
      assert.deepEqual(idsOf(reply.body.items), expected, query);
      assert.equal(reply.body.total, expected.length, query);
    }
  });

  test('pages: limit 2 gives c5 c4, then c3 c2, then c1, then nothing; total is always 5', async () => {
    const pages: [number, string[]][] = [
      [1, ['c5', 'c4']],
      [2, ['c3', 'c2']],
      [3, ['c1']],
      [4, []],
    ];
    for (const [page, expected] of pages) {
      const reply = await list(`?limit=2&page=${page}`);
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(idsOf(reply.body.items), expected, `page ${page}`);
      assert.deepEqual([reply.body.total, reply.body.page, reply.body.limit], [5, page, 2]);
    }
    const filtered = await list('?channel=push&limit=1&page=2');
    assert.deepEqual(idsOf(filtered.body.items), ['c3']);
    assert.equal(filtered.body.total, 2);
  });

  test('the total follows creations and deletions', async () => {
    const extra = await generateOk(listService, lead, briefFor(segmentB));
    assert.equal((await list()).body.total, 6);
    assert.equal((await list('?status=draft')).body.total, 3);
    await listService.request('DELETE', `/v1/campaigns/${extra.id}`, { token: lead });
    assert.equal((await list()).body.total, 5);
    assert.equal((await list('?status=draft')).body.total, 2);
  });

  test('limit 1 and limit 200 are accepted', async () => {
    assert.equal((await list('?limit=1')).body.items.length, 1);
    assert.equal((await list('?limit=200')).body.limit, 200);
  });

  const invalid: [string, string][] = [
    ['?limit=0', 'limit'],
    ['?limit=201', 'limit'],
    ['?limit=1.5', 'limit'],
    ['?limit=abc', 'limit'],
    ['?page=0', 'page'],
    ['?page=-1', 'page'],
    ['?page=two', 'page'],
    ['?status=bogus', 'status'],
    ['?status=', 'status'],
    ['?channel=fax', 'channel'],
    ['?segmentId=', 'segmentId'],
    ['?status=draft&status=sent', 'status'],
    ['?channel=sms&channel=sms', 'channel'],
  ];
  for (const [query, field] of invalid) {
    test(`${query} is 400 validation_failed on ${field}`, async () => {
      assertProblem(await list(query), 400, 'validation_failed', [field]);
    });
  }
});

describe('machine description', () => {
  const OPERATIONS: [string, string, string][] = [
    ['campaigns.generate', 'post', '/v1/campaigns/generate'],
    ['campaigns.list', 'get', '/v1/campaigns'],
    ['campaigns.get', 'get', '/v1/campaigns/{id}'],
    ['campaigns.update', 'patch', '/v1/campaigns/{id}'],
    ['campaigns.delete', 'delete', '/v1/campaigns/{id}'],
    ['campaigns.setStatus', 'patch', '/v1/campaigns/{id}/status'],
    ['campaigns.events', 'get', '/v1/campaigns/{id}/events'],
    ['campaigns.audience', 'get', '/v1/campaigns/{id}/audience'],
    ['campaigns.audienceCsv', 'get', '/v1/campaigns/{id}/audience.csv'],
    ['campaigns.revise', 'post', '/v1/campaigns/{id}/revise'],
    ['campaigns.variants', 'post', '/v1/campaigns/{id}/variants'],
    ['campaigns.versions', 'get', '/v1/campaigns/{id}/versions'],
    ['campaigns.restore', 'post', '/v1/campaigns/{id}/versions/{version}/restore'],
  ];

  test('has every campaign operation under its operation id, and no other', async () => {
    const reply = await service.request('GET', '/v1/openapi.json');
    assert.equal(reply.status, 200);
    for (const [operationId, method, path] of OPERATIONS) {
      assert.equal(reply.body.paths[path]?.[method]?.operationId, operationId, `${method} ${path}`);
    }
    const campaignIds = Object.values(reply.body.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((item) => Object.values(item).map((op) => op.operationId))
      .filter((id) => id?.startsWith('campaigns.'))
      .sort();
    assert.deepEqual(campaignIds, OPERATIONS.map(([id]) => id).sort());
  });

  test('generate takes the Idempotency-Key header and declares 409, 429, 502 and 503 problems', async () => {
    const doc = (await service.request('GET', '/v1/openapi.json')).body;
    const generateOp = doc.paths['/v1/campaigns/generate'].post;
    const header = generateOp.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Idempotency-Key');
    assert.ok(header, JSON.stringify(generateOp.parameters));
    assert.equal(header.required, false);
    assert.equal(header.schema.maxLength, 255);
    for (const status of ['400', '401', '409', '429', '502', '503']) {
      assert.ok(generateOp.responses[status], `generate lacks ${status}`);
      if (status !== '200') assert.ok(generateOp.responses[status].content['application/problem+json'], status);
    }
    assert.match(generateOp.responses['502'].description, /llm_error/);
    assert.match(generateOp.responses['503'].description, /llm_unavailable/);
    assert.match(generateOp.responses['409'].description, /conflict/);
    assert.ok(generateOp.responses['429'].headers['Retry-After']);
    assert.ok(generateOp.responses['200'].headers['Idempotency-Replayed']);
  });
});
