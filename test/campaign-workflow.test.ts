// Campaign review workflow, trail, edit and delete (product.md sections 3 and 6): every legal move with the role it
// needs, every illegal one as 409 naming the allowed moves, no-ops, role before state, the events trail, edits
// only of drafts within the channel's limits, deletes only of drafts. The local generator writes the copy.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CampaignStatus } from '../src/domain/campaigns.ts';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { audienceOf, briefFor, campaignTotal, generateOk, NO_RATE_LIMIT, type Campaign } from './support/campaigns.ts';

let service: TestService;
let marketer: string;
let marketerId: string;
let lead: string;
let leadId: string;
let admin: string;
let segmentId: string;

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  const m = await service.createUser('lifecycle_marketer');
  marketerId = m.id;
  marketer = (await service.signIn(m.email)).accessToken;
  const l = await service.createUser('marketing_lead');
  leadId = l.id;
  lead = (await service.signIn(l.email)).accessToken;
  admin = await service.tokenFor('admin');
  segmentId = (await audienceOf(service, marketer, 2)).id;
});
after(() => service.close());

const draft = (channel: 'sms' | 'push' | 'email' = 'sms') => generateOk(service, marketer, briefFor(segmentId, { channel }));

function setStatus(token: string, id: string, status: unknown, note?: unknown) {
  return service.request('PATCH', `/v1/campaigns/${id}/status`, { token, body: note === undefined ? { status } : { status, note } });
}

async function moveOk(token: string, id: string, status: CampaignStatus, note?: string): Promise<Campaign> {
  const reply = await setStatus(token, id, status, note);
  assert.equal(reply.status, 200, reply.text);
  assert.equal(reply.body.status, status);
  return reply.body as Campaign;
}

async function read(id: string): Promise<Campaign> {
  const reply = await service.request('GET', `/v1/campaigns/${id}`, { token: marketer });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as Campaign;
}

async function events(id: string): Promise<any[]> {
  const reply = await service.request('GET', `/v1/campaigns/${id}/events`, { token: marketer });
  assert.equal(reply.status, 200, reply.text);
  return reply.body as any[];
}

/** A campaign brought to `status` by the shortest legal path. */
async function campaignIn(status: CampaignStatus): Promise<Campaign> {
  const campaign = await draft();
  const path: Record<CampaignStatus, CampaignStatus[]> = { draft: [], in_review: ['in_review'], approved: ['in_review', 'approved'], sent: ['in_review', 'approved', 'sent'] };
  for (const step of path[status]) await moveOk(lead, campaign.id, step);
  return read(campaign.id);
}

describe('legal moves', () => {
  test('a lifecycle_marketer submits a draft for review: draft → in_review', async () => {
    const campaign = await draft();
    service.clock.advance(1000);
    const moved = await moveOk(marketer, campaign.id, 'in_review');
    assert.equal(moved.id, campaign.id);
    assert.equal(moved.updatedAt, service.clock.now().toISOString());
    assert.equal(moved.createdAt, campaign.createdAt);
    assert.equal((await read(campaign.id)).status, 'in_review');
  });

  test('a marketing_lead approves: in_review → approved', async () => {
    const campaign = await campaignIn('in_review');
    await moveOk(lead, campaign.id, 'approved');
    assert.equal((await read(campaign.id)).status, 'approved');
  });

  test('a marketing_lead requests changes: in_review → draft', async () => {
    const campaign = await campaignIn('in_review');
    await moveOk(lead, campaign.id, 'draft', 'Shorter title, please.');
    assert.equal((await read(campaign.id)).status, 'draft');
  });

  test('a marketing_lead marks an approved campaign sent: approved → sent', async () => {
    const campaign = await campaignIn('approved');
    await moveOk(lead, campaign.id, 'sent');
    assert.equal((await read(campaign.id)).status, 'sent');
  });

  test('an approved campaign is reopened: approved → draft, and can be edited again', async () => {
    const campaign = await campaignIn('approved');
    await moveOk(lead, campaign.id, 'draft', 'Prices changed.');
    const edit = await service.request('PATCH', `/v1/campaigns/${campaign.id}`, { token: marketer, body: { title: 'New prices' } });
    assert.equal(edit.status, 200, edit.text);
    assert.equal(edit.body.title, 'New prices');
  });

  test('reopening needs no reviewer: a lifecycle_marketer moves approved → draft', async () => {
    const campaign = await campaignIn('approved');
    await moveOk(marketer, campaign.id, 'draft');
  });

  test('an admin may approve and mark sent like a lead', async () => {
    const campaign = await campaignIn('in_review');
    await moveOk(admin, campaign.id, 'approved');
    await moveOk(admin, campaign.id, 'sent');
  });
});

describe('illegal moves', () => {
  const ILLEGAL: [CampaignStatus, CampaignStatus, string][] = [
    ['draft', 'approved', 'in_review'],
    ['draft', 'sent', 'in_review'],
    ['in_review', 'sent', 'approved or draft'],
    ['approved', 'in_review', 'sent or draft'],
    ['sent', 'draft', 'nowhere'],
    ['sent', 'in_review', 'nowhere'],
    ['sent', 'approved', 'nowhere'],
  ];
  for (const [from, to, allowed] of ILLEGAL) {
    test(`${from} → ${to} is 409 conflict naming the allowed moves (${allowed}); status and trail unchanged`, async () => {
      const campaign = await campaignIn(from);
      const trail = await events(campaign.id);
      const reply = await setStatus(lead, campaign.id, to);
      assertProblem(reply, 409, 'conflict');
      assert.ok(reply.body.detail.includes(allowed), reply.body.detail);
      assert.ok(reply.body.detail.includes(to), reply.body.detail);
      assert.deepEqual(await read(campaign.id), campaign);
      assert.deepEqual(await events(campaign.id), trail);
    });
  }
});

describe('setting the current status', () => {
  for (const status of ['draft', 'in_review', 'approved', 'sent'] as const) {
    test(`${status} → ${status} is a 200 no-op: the campaign unchanged and no event added`, async () => {
      const campaign = await campaignIn(status);
      const trail = await events(campaign.id);
      service.clock.advance(1000);
      const reply = await setStatus(lead, campaign.id, status, 'again');
      assert.equal(reply.status, 200, reply.text);
      assert.deepEqual(reply.body, campaign);
      assert.deepEqual(await events(campaign.id), trail);
    });
  }
});

describe('role before state', () => {
  test('a lifecycle_marketer asking approved on a draft is 403 forbidden, not 409', async () => {
    const campaign = await draft();
    assertProblem(await setStatus(marketer, campaign.id, 'approved'), 403, 'forbidden');
    assert.equal((await read(campaign.id)).status, 'draft');
  });

  test('a lifecycle_marketer asking sent on a draft is 403 forbidden, not 409', async () => {
    const campaign = await draft();
    assertProblem(await setStatus(marketer, campaign.id, 'sent'), 403, 'forbidden');
  });

  test('a lifecycle_marketer may not approve, request changes or mark sent (403, status unchanged)', async () => {
    const inReview = await campaignIn('in_review');
    assertProblem(await setStatus(marketer, inReview.id, 'approved'), 403, 'forbidden');
    assertProblem(await setStatus(marketer, inReview.id, 'draft'), 403, 'forbidden');
    assert.equal((await read(inReview.id)).status, 'in_review');
    const approved = await campaignIn('approved');
    assertProblem(await setStatus(marketer, approved.id, 'sent'), 403, 'forbidden');
    assert.equal((await read(approved.id)).status, 'approved');
  });
});

describe('events trail', () => {
  test('oldest first: creation from null to draft, then each move with userId, userName, note and at', async () => {
    const start = service.clock.now().getTime();
    const at = (seconds: number) => new Date(start + seconds * 1000).toISOString();
    const campaign = await draft();
    service.clock.advance(1000);
    await moveOk(marketer, campaign.id, 'in_review', '  First version.  ');
    service.clock.advance(1000);
    await moveOk(lead, campaign.id, 'draft', 'Mention the deadline.');
    service.clock.advance(1000);
    await moveOk(marketer, campaign.id, 'in_review');
    service.clock.advance(1000);
    await moveOk(lead, campaign.id, 'approved');
    service.clock.advance(1000);
    await moveOk(lead, campaign.id, 'sent', 'Sent on Monday.');
    const marketerName = 'Test lifecycle_marketer';
    const leadName = 'Test marketing_lead';
    assert.deepEqual(await events(campaign.id), [
      { from: null, to: 'draft', note: null, userId: marketerId, userName: marketerName, at: at(0) },
      { from: 'draft', to: 'in_review', note: 'First version.', userId: marketerId, userName: marketerName, at: at(1) },
      { from: 'in_review', to: 'draft', note: 'Mention the deadline.', userId: leadId, userName: leadName, at: at(2) },
      { from: 'draft', to: 'in_review', note: null, userId: marketerId, userName: marketerName, at: at(3) },
      { from: 'in_review', to: 'approved', note: null, userId: leadId, userName: leadName, at: at(4) },
      { from: 'approved', to: 'sent', note: 'Sent on Monday.', userId: leadId, userName: leadName, at: at(5) },
    ]);
    assert.equal((await read(campaign.id)).updatedAt, at(5));
  });
});

describe('status change validation', () => {
  test('a status outside draft, in_review, approved, sent is 400 on status', async () => {
    const campaign = await draft();
    assertProblem(await setStatus(lead, campaign.id, 'bogus'), 400, 'validation_failed', ['status']);
    assertProblem(await setStatus(lead, campaign.id, 3), 400, 'validation_failed', ['status']);
    const missing = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { note: 'x' } });
    assertProblem(missing, 400, 'validation_failed', ['status']);
    assert.equal((await read(campaign.id)).status, 'draft');
  });

  test('a note must be 1-1000 characters after trimming, and a string', async () => {
    const campaign = await draft();
    assertProblem(await setStatus(marketer, campaign.id, 'in_review', '   '), 400, 'validation_failed', ['note']);
    assertProblem(await setStatus(marketer, campaign.id, 'in_review', 'x'.repeat(1001)), 400, 'validation_failed', ['note']);
    assertProblem(await setStatus(marketer, campaign.id, 'in_review', 5), 400, 'validation_failed', ['note']);
    assert.equal((await read(campaign.id)).status, 'draft');
    await moveOk(marketer, campaign.id, 'in_review', 'x'.repeat(1000));
  });

  test('a body that is not an object is 400 on body', async () => {
    const campaign = await draft();
    const reply = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: ['approved'] });
    assertProblem(reply, 400, 'validation_failed', ['body']);
  });
});

describe('edit', () => {
  const edit = (id: string, body: unknown, token = marketer) => service.request('PATCH', `/v1/campaigns/${id}`, { token, body });

  test('a draft takes a new title, message and call to action, trimmed; unnamed parts are kept', async () => {
    const campaign = await draft('email');
    service.clock.advance(1000);
    const reply = await edit(campaign.id, { title: '  Spring sale  ', callToAction: 'See the offers' });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { ...campaign, title: 'Spring sale', callToAction: 'See the offers', updatedAt: service.clock.now().toISOString() });
    assert.deepEqual(await read(campaign.id), reply.body);
    const message = await edit(campaign.id, { message: 'Line one.\nLine two.' });
    assert.equal(message.status, 200, message.text);
    assert.equal(message.body.message, 'Line one.\nLine two.');
    assert.equal(message.body.title, 'Spring sale');
  });

  for (const status of ['in_review', 'approved', 'sent'] as const) {
    test(`a campaign ${status} cannot be edited: 409 conflict, unchanged`, async () => {
      const campaign = await campaignIn(status);
      const reply = await edit(campaign.id, { title: 'Changed' }, lead);
      assertProblem(reply, 409, 'conflict');
      assert.ok(reply.body.detail.includes(status), reply.body.detail);
      assert.deepEqual(await read(campaign.id), campaign);
    });
  }

  const LIMIT_CASES: ['sms' | 'push' | 'email', 'title' | 'message' | 'callToAction', number][] = [
    ['sms', 'title', 60],
    ['sms', 'message', 320],
    ['sms', 'callToAction', 40],
    ['push', 'title', 60],
    ['push', 'message', 140],
    ['push', 'callToAction', 40],
    ['email', 'title', 120],
    ['email', 'message', 1200],
    ['email', 'callToAction', 60],
  ];
  for (const [channel, field, max] of LIMIT_CASES) {
    test(`${channel} ${field}: ${max} characters are accepted, ${max + 1} are 400 on ${field}`, async () => {
      const campaign = await draft(channel);
      const over = await edit(campaign.id, { [field]: 'x'.repeat(max + 1) });
      assertProblem(over, 400, 'validation_failed', [field]);
      assert.deepEqual(await read(campaign.id), campaign);
      const exact = await edit(campaign.id, { [field]: 'x'.repeat(max) });
      assert.equal(exact.status, 200, exact.text);
      assert.equal(exact.body[field], 'x'.repeat(max));
    });
  }

  test('an empty or non-string part is 400 naming it', async () => {
    const campaign = await draft();
    assertProblem(await edit(campaign.id, { title: '   ' }), 400, 'validation_failed', ['title']);
    assertProblem(await edit(campaign.id, { message: 42 }), 400, 'validation_failed', ['message']);
    assertProblem(await edit(campaign.id, { callToAction: null }), 400, 'validation_failed', ['callToAction']);
    assert.deepEqual(await read(campaign.id), campaign);
  });

  test('unknown properties are ignored: status, model, createdBy cannot be set by an edit', async () => {
    const campaign = await draft();
    const reply = await edit(campaign.id, { status: 'sent', model: 'gpt', createdBy: 'someone', segmentName: 'x', title: 'Kept' });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, { ...campaign, title: 'Kept', updatedAt: reply.body.updatedAt });
  });
});

describe('delete', () => {
  const remove = (id: string, token = marketer) => service.request('DELETE', `/v1/campaigns/${id}`, { token });

  test('a draft is deleted: 200 null, then 404 on get and events, one fewer in the list', async () => {
    const campaign = await draft();
    const before = await campaignTotal(service, marketer);
    const reply = await remove(campaign.id);
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.text, 'null');
    assertProblem(await service.request('GET', `/v1/campaigns/${campaign.id}`, { token: marketer }), 404, 'not_found');
    assertProblem(await service.request('GET', `/v1/campaigns/${campaign.id}/events`, { token: marketer }), 404, 'not_found');
    assert.equal(await campaignTotal(service, marketer), before - 1);
    assertProblem(await remove(campaign.id), 404, 'not_found');
  });

  for (const status of ['in_review', 'approved', 'sent'] as const) {
    test(`a campaign ${status} is kept: 409 conflict`, async () => {
      const campaign = await campaignIn(status);
      const reply = await remove(campaign.id, lead);
      assertProblem(reply, 409, 'conflict');
      assert.deepEqual(await read(campaign.id), campaign);
    });
  }
});

describe('unknown ids', () => {
  test('get, update, delete, status and events of an unknown id are 404 not_found', async () => {
    const id = 'no-such-campaign';
    assertProblem(await service.request('GET', `/v1/campaigns/${id}`, { token: marketer }), 404, 'not_found');
    assertProblem(await service.request('PATCH', `/v1/campaigns/${id}`, { token: marketer, body: { title: 'x' } }), 404, 'not_found');
    assertProblem(await service.request('DELETE', `/v1/campaigns/${id}`, { token: marketer }), 404, 'not_found');
    assertProblem(await setStatus(marketer, id, 'in_review'), 404, 'not_found');
    assertProblem(await service.request('GET', `/v1/campaigns/${id}/events`, { token: marketer }), 404, 'not_found');
  });
});
