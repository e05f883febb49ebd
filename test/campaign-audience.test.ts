// The audience frozen at approval (product.md section 10): GET /v1/campaigns/{id}/audience answers the segment's
// conditions, their words and their size at approval with the size now; 409 before approval; later edits or the
// deletion of the segment change nothing; reopening to draft clears it; a campaign whose segment is gone cannot be
// approved.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProblem, startService, type TestService } from './helpers.ts';
import { audienceOf, briefFor, createCustomers, generateOk, moveCampaignTo, NO_RATE_LIMIT } from './support/campaigns.ts';

let service: TestService;
let marketer: string;
let lead: string;

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  marketer = await service.tokenFor('lifecycle_marketer');
  lead = await service.tokenFor('marketing_lead');
});
after(() => service.close());

const audience = (id: string, token = marketer) => service.request('GET', `/v1/campaigns/${id}/audience`, { token });

/** A segment of `size` customers in a country of its own, and a draft for it. */
async function draftFor(size: number) {
  const segment = await audienceOf(service, marketer, size);
  const campaign = await generateOk(service, marketer, briefFor(segment.id));
  return { segment, campaign, country: segment.conditions[0]!.value as string };
}

describe('approval freezes the audience', () => {
  test('the conditions, their words, the size at approval and the approval time; sizeNow counts them now', async () => {
    const { segment, campaign, country } = await draftFor(3);
    service.clock.advance(60_000);
    const approved = await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const reply = await audience(campaign.id);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, {
      conditions: segment.conditions,
      description: `customers in ${country}`,
      sizeAtApproval: 3,
      approvedAt: approved.updatedAt,
      sizeNow: 3,
    });

    await createCustomers(service, marketer, country, 2);
    const later = await audience(campaign.id);
    assert.equal(later.body.sizeAtApproval, 3);
    assert.equal(later.body.sizeNow, 5);
  });

  test('editing the segment after approval changes neither the conditions nor the size at approval', async () => {
    const { segment, campaign } = await draftFor(2);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const edited = await service.request('PATCH', `/v1/segments/${segment.id}`, {
      token: marketer,
      body: { name: 'Renamed', conditions: [{ field: 'totalTransactions', operator: 'gte', value: 0 }] },
    });
    assert.equal(edited.status, 200, edited.text);
    const reply = await audience(campaign.id);
    assert.deepEqual(reply.body.conditions, segment.conditions);
    assert.equal(reply.body.sizeAtApproval, 2);
    assert.equal(reply.body.sizeNow, 2);
  });

  test('deleting the segment after approval keeps the audience', async () => {
    const { segment, campaign } = await draftFor(1);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    assert.equal((await service.request('DELETE', `/v1/segments/${segment.id}`, { token: marketer })).status, 200);
    const reply = await audience(campaign.id);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body.conditions, segment.conditions);
    assert.equal(reply.body.sizeNow, 1);
  });

  test('marking the campaign sent keeps the audience', async () => {
    const { segment, campaign } = await draftFor(1);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const before = (await audience(campaign.id)).body;
    const sent = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status: 'sent' } });
    assert.equal(sent.status, 200, sent.text);
    const reply = await audience(campaign.id);
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(reply.body, before);
    assert.deepEqual(reply.body.conditions, segment.conditions);
  });

  test('every role may read it', async () => {
    const { campaign } = await draftFor(1);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const admin = await service.tokenFor('admin');
    for (const token of [marketer, lead, admin]) assert.equal((await audience(campaign.id, token)).status, 200);
  });
});

describe('before approval and after reopening', () => {
  test('a draft and a campaign in review answer 409 conflict naming the status', async () => {
    const { campaign } = await draftFor(1);
    const draft = await audience(campaign.id);
    assertProblem(draft, 409, 'conflict');
    assert.match(draft.body.detail, /draft/);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'in_review');
    const review = await audience(campaign.id);
    assertProblem(review, 409, 'conflict');
    assert.match(review.body.detail, /in_review/);
  });

  test('reopening an approved campaign to draft clears the audience; approving again freezes the segment as it is then', async () => {
    const { segment, campaign, country } = await draftFor(2);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const reopened = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status: 'draft' } });
    assert.equal(reopened.status, 200, reopened.text);
    assertProblem(await audience(campaign.id), 409, 'conflict');

    const narrower = [
      { field: 'country', operator: 'eq', value: country },
      { field: 'totalTransactions', operator: 'gte', value: 100 },
    ];
    assert.equal((await service.request('PATCH', `/v1/segments/${segment.id}`, { token: marketer, body: { conditions: narrower } })).status, 200);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'approved');
    const reply = await audience(campaign.id);
    assert.deepEqual(
      reply.body.conditions.map(({ field, operator, value }: { field: string; operator: string; value: unknown }) => ({ field, operator, value })),
      narrower,
    );
    assert.equal(reply.body.sizeAtApproval, 0);
    assert.equal(reply.body.description, `customers in ${country} with at least 100 purchases`);
  });

  test('a campaign whose segment was deleted cannot be approved: 409 conflict, and it stays in review', async () => {
    const { segment, campaign } = await draftFor(1);
    await moveCampaignTo(service, { campaign: campaign.id, author: marketer, reviewer: lead }, 'in_review');
    assert.equal((await service.request('DELETE', `/v1/segments/${segment.id}`, { token: marketer })).status, 200);
    const refused = await service.request('PATCH', `/v1/campaigns/${campaign.id}/status`, { token: lead, body: { status: 'approved' } });
    assertProblem(refused, 409, 'conflict');
    assert.match(refused.body.detail, /deleted/);
    assert.equal((await service.request('GET', `/v1/campaigns/${campaign.id}`, { token: lead })).body.status, 'in_review');
  });

  test('an unknown campaign is 404; without a token 401', async () => {
    assertProblem(await audience('no-such-campaign'), 404, 'not_found');
    assertProblem(await service.request('GET', '/v1/campaigns/no-such-campaign/audience'), 401, 'unauthenticated');
  });
});
