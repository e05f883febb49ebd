import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startService, type TestService } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startService();
});
after(() => service.close());

test('a signed-in admin reads /v1/me', async () => {
  const token = await service.tokenFor('admin');
  const reply = await service.request('GET', '/v1/me', { token });
  assert.equal(reply.status, 200);
  assert.equal(reply.body.role, 'admin');
});
