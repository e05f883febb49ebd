// Bad input against the whole route table: bodies that are not objects, repeated query parameters, odd paths,
// bodies sent where none is read. Routes come from the OpenAPI document, which is generated from the route table,
// so a new route is covered without editing this file.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';

let service: TestService;
let token: string;
/** An existing resource per path, so writes that wrongly succeeded would show. */
const ids: Record<string, string> = {};

before(async () => {
  service = await startService();
  token = await service.tokenFor('admin');
  const customer = await service.request('POST', '/v1/customers', {
    token,
    body: { name: 'Ada', email: 'ada@example.com', country: 'Germany', totalTransactions: 3, totalAmountSpent: 120, lastActivityDate: '2026-11-01', status: 'active' },
  });
  const segment = await service.request('POST', '/v1/segments', { token, body: { name: 'Germans', conditions: [{ field: 'country', operator: 'eq', value: 'Germany' }] } });
  const campaign = await service.request('POST', '/v1/campaigns/generate', {
    token,
    body: { segmentId: segment.body.id, objective: 'Invite German customers back for spring', channel: 'email', tone: 'friendly' },
  });
  const user = await service.createUser('lifecycle_marketer');
  ids['/v1/customers/{id}'] = customer.body.id;
  ids['/v1/segments/{id}'] = segment.body.id;
  ids['/v1/campaigns/{id}'] = campaign.body.id;
  ids['/v1/users/{id}'] = user.id;
});
after(() => service.close());

/** Every documented operation as [method, concrete path, documented path, has a body]. */
async function operations(): Promise<{ method: string; path: string; template: string; hasBody: boolean; queries: string[] }[]> {
  const doc = (await service.request('GET', '/v1/openapi.json')).body as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> }; parameters?: { in: string; name: string }[] }>>;
  };
  const out = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    const prefix = template.replace(/\/[^/]*\{id\}.*$/, '/{id}');
    const path = template.replace('{id}', ids[prefix] ?? 'no-such-id');
    for (const [method, op] of Object.entries(methods)) {
      const queries = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      // A file upload (a CSV import) answers a JSON body with 415; its own tests cover it.
      out.push({ method: method.toUpperCase(), path, template, hasBody: Boolean(op.requestBody?.content['application/json']), queries });
    }
  }
  return out;
}

async function snapshot(): Promise<string> {
  const parts = await Promise.all(
    ['/v1/customers', '/v1/segments', '/v1/campaigns', '/v1/users', `/v1/campaigns/${ids['/v1/campaigns/{id}']}/events`].map((p) => service.request('GET', p, { token })),
  );
  return parts.map((r) => r.text).join('\n');
}

const NOT_OBJECTS: [string, string][] = [
  ['an empty array', '[]'],
  ['an array holding an object', '[{"name":"x","status":"churned"}]'],
  ['a string', '"x"'],
  ['a number', '1'],
  ['null', 'null'],
  ['true', 'true'],
];

test('every operation with a body rejects a JSON body that is not an object with 400 validation_failed on body, and changes nothing', async () => {
  const withBody = (await operations()).filter((op) => op.hasBody);
  assert.ok(withBody.length >= 14, `only ${withBody.length} operations with a body`);
  const before = await snapshot();
  for (const op of withBody) {
    for (const [name, raw] of NOT_OBJECTS) {
      const reply = await service.request(op.method, op.path, { token, raw, headers: { 'content-type': 'application/json' } });
      assert.equal(reply.status, 400, `${op.method} ${op.template} with ${name}: ${reply.text}`);
      assertProblem(reply, 400, 'validation_failed', ['body']);
    }
  }
  assert.equal(await snapshot(), before);
});

test('a repeated single-valued query parameter is 400 naming it, on every operation with query parameters', async () => {
  const withQuery = (await operations()).filter((op) => op.queries.length > 0);
  assert.ok(withQuery.length >= 4);
  for (const op of withQuery) {
    for (const name of op.queries) {
      const reply = await service.request(op.method, `${op.path}?${name}=1&${name}=2`, { token });
      assertProblem(reply, 400, 'validation_failed', [name]);
    }
  }
});

test('?status=a&status=b on the customers list is 400 naming status, not the first value', async () => {
  const reply = await service.request('GET', '/v1/customers?status=active&status=churned', { token });
  assertProblem(reply, 400, 'validation_failed', ['status']);
});

test('a path with an empty segment (//v1/me, /v1//me) is 400 naming path, never another resource', async () => {
  for (const path of ['//v1/me', '/v1//me', '//health', '/v1/customers//kpis']) {
    const reply = await service.request('GET', path, { token });
    assertProblem(reply, 400, 'validation_failed', ['path']);
  }
  assert.equal((await service.request('GET', '/v1/me', { token })).status, 200);
});

test('a DELETE with a body is answered as if it had none: the body is ignored', async () => {
  const created = await service.request('POST', '/v1/segments', { token, body: { name: 'To delete', conditions: [{ field: 'country', operator: 'eq', value: 'Chile' }] } });
  const reply = await service.request('DELETE', `/v1/segments/${created.body.id}`, { token, raw: '{"not":"read"', headers: { 'content-type': 'text/plain' } });
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.text, 'null');
  assert.equal((await service.request('GET', `/v1/segments/${created.body.id}`, { token })).status, 404);
  // The connection is still good for the next request.
  assert.equal((await service.request('GET', '/v1/me', { token })).status, 200);
});
