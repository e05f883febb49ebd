// Campaign copy within the channel limits (product.md section 6): sms 60 / 320 / 40, push 60 / 140 / 40,
// email 120 / 1200 / 60 on title / message / callToAction. Over-long model output is cut at word boundaries, sms and
// push messages carry the call to action; the local generator stays within the limits, is deterministic, and writes
// in the tone (what it may and may not say to the customer is test/local-copy.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './helpers.ts';
import {
  assertWithinLimits,
  audienceOf,
  briefFor,
  CHANNELS,
  copyReply,
  generateOk,
  LIMITS,
  NO_RATE_LIMIT,
  startWithProvider,
  TONES,
  type WithProvider,
} from './support/campaigns.ts';

/** `count` distinct five-letter words starting with `letter`, so a cut can be checked to fall between two of them. */
const words = (count: number, letter = 'w') => Array.from({ length: count }, (_, i) => `${letter}${String(i).padStart(3, '0')}x`).join(' ');

/** The most words (of `words(n, letter)`) whose text, wrapped by `wrap`, fits in `max` characters. */
function mostWords(max: number, wrap: (text: string) => string = (text) => text, letter = 'w'): string {
  let count = 1;
  while (wrap(words(count + 1, letter)).length <= max) count++;
  return words(count, letter);
}

/** 600 characters of a realistic brief: several sentences, commas and a semicolon. */
const LONG_OBJECTIVE = (
  'Reconnect with customers who have not ordered in ninety days by offering free shipping and a personal thank-you note; ' +
  'remind them what is new in the catalogue, '
).repeat(5).slice(0, 600);

describe('over-long model output is cut at word boundaries within the channel limits', () => {
  let setup: WithProvider;
  before(async () => {
    setup = await startWithProvider('openai');
  });
  after(() => setup.close());

  const overLong = { title: words(40, 't'), message: words(400, 'm'), callToAction: words(20, 'c') };

  for (const channel of CHANNELS) {
    const limits = LIMITS[channel];
    test(`${channel}: title, message and call to action each keep the most whole words that fit (${limits.title} / ${limits.message} / ${limits.callToAction})`, async () => {
      setup.fake.enqueue(copyReply(overLong));
      const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel }));
      assert.equal(campaign.title, mostWords(limits.title, undefined, 't'));
      assert.equal(campaign.callToAction, mostWords(limits.callToAction, undefined, 'c'));
      if (channel === 'email') {
        assert.equal(campaign.message, mostWords(limits.message, undefined, 'm'));
      } else {
        // The body is cut to leave room for ". " and the call to action, which ends the message.
        const cta = campaign.callToAction;
        assert.equal(campaign.message, `${mostWords(limits.message, (body) => `${body}. ${cta}`, 'm')}. ${cta}`);
      }
      assertWithinLimits(campaign, channel);
    });
  }

  for (const channel of ['sms', 'push'] as const) {
    test(`${channel}: a call to action the model left out of the message is appended, after a full stop`, async () => {
      setup.fake.enqueue(copyReply({ title: 'We miss you', message: 'Come back for 20% off your next order', callToAction: 'Shop now' }));
      setup.fake.enqueue(copyReply({ title: 'We miss you', message: 'Come back for 20% off your next order!', callToAction: 'Shop now' }));
      const plain = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel }));
      assert.equal(plain.message, 'Come back for 20% off your next order. Shop now');
      const exclaimed = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel }));
      assert.equal(exclaimed.message, 'Come back for 20% off your next order! Shop now');
    });

    test(`${channel}: a message that already holds the call to action and fits is kept as written`, async () => {
      const copy = { title: 'We miss you', message: 'Shop now and get 20% off your next order.', callToAction: 'Shop now' };
      setup.fake.enqueue(copyReply(copy));
      const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel }));
      assert.deepEqual([campaign.title, campaign.message, campaign.callToAction], [copy.title, copy.message, copy.callToAction]);
    });

    test(`${channel}: an over-long message whose call to action the cut would lose ends with it, the whole within ${LIMITS[channel].message}`, async () => {
      const cta = 'Claim your gift';
      setup.fake.enqueue(copyReply({ title: 'Gift', message: `${words(100)} ${cta}`, callToAction: cta }));
      const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel }));
      assert.equal(campaign.message, `${mostWords(LIMITS[channel].message, (body) => `${body}. ${cta}`)}. ${cta}`);
      assertWithinLimits(campaign, channel);
    });
  }

  test('email: the message keeps its paragraphs and gets no call to action appended (it is the button)', async () => {
    setup.fake.enqueue(copyReply({ title: 'We miss you', message: 'Hello,\n\nCome back for 20% off.\n\nThe team', callToAction: 'Shop now' }));
    const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel: 'email' }));
    assert.equal(campaign.message, 'Hello,\n\nCome back for 20% off.\n\nThe team');
    assert.equal(campaign.callToAction, 'Shop now');
  });

  test('control characters and runs of white space in model output are cleaned', async () => {
    setup.fake.enqueue(copyReply({ title: ' We\u0007 miss\t\tyou ', message: 'Come   back\u001b for 20% off.', callToAction: 'Shop\u200b now' }));
    const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel: 'sms' }));
    assert.deepEqual([campaign.title, campaign.message, campaign.callToAction], ['We miss you', 'Come back for 20% off. Shop now', 'Shop now']);
  });

  test('a cut without a word boundary never splits an emoji: the part stays well-formed and within the limit', async () => {
    // "Hi " then 35 two-unit emoji: 73 UTF-16 units, no space in the second half, so the cut is a hard one.
    setup.fake.enqueue(copyReply({ title: `Hi ${'🎉'.repeat(35)}`, message: 'Come back for 20% off.', callToAction: 'Shop now' }));
    const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel: 'sms' }));
    assert.equal(campaign.title, `Hi ${'🎉'.repeat(28)}`);
    assert.doesNotMatch(campaign.title, /\uFFFD|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });

  test('a part of nothing but dashes beyond the limit still gives a non-empty part within the limit, not a 500', async () => {
    setup.fake.enqueue(copyReply({ title: '-'.repeat(70), message: 'Come back for 20% off.', callToAction: '—'.repeat(50) }));
    const campaign = await generateOk(setup.service, setup.token, briefFor(setup.segment.id, { channel: 'sms' }));
    assert.equal(campaign.title, '-'.repeat(60));
    assert.equal(campaign.callToAction, '—'.repeat(40));
  });

  test('the anthropic wire format is cut the same way', async () => {
    const anthropic = await startWithProvider('anthropic');
    try {
      anthropic.fake.enqueue(copyReply(overLong));
      const campaign = await generateOk(anthropic.service, anthropic.token, briefFor(anthropic.segment.id, { channel: 'push' }));
      assert.equal(campaign.title, mostWords(60, undefined, 't'));
      assert.equal(campaign.callToAction, mostWords(40, undefined, 'c'));
      assert.equal(campaign.message, `${mostWords(140, (body) => `${body}. ${campaign.callToAction}`, 'm')}. ${campaign.callToAction}`);
    } finally {
      await anthropic.close();
    }
  });
});

describe('local generator', () => {
  let service: TestService;
  let token: string;
  let segment: { id: string; name: string };
  const MARKERS = /[{}]|undefined|null|NaN/;

  before(async () => {
    service = await startService({ env: NO_RATE_LIMIT });
    token = await service.tokenFor('lifecycle_marketer');
    segment = await audienceOf(service, token, 1234, 'Portugal');
  });
  after(() => service.close());

  for (const channel of CHANNELS) {
    test(`${channel}: every tone, with a 10- and a 600-character objective, stays within the limits and leaves no template markers`, async () => {
      for (const tone of TONES) {
        for (const objective of ['x'.repeat(10), LONG_OBJECTIVE, 'Win back customers who stopped buying with a 20% discount on their next order.']) {
          const campaign = await generateOk(service, token, briefFor(segment.id, { channel, tone, objective }));
          assert.equal(campaign.model, 'local');
          assertWithinLimits(campaign, channel);
          for (const part of [campaign.title, campaign.message, campaign.callToAction]) assert.doesNotMatch(part, MARKERS, `${channel} ${tone}: ${part}`);
        }
      }
    });
  }

  test('an objective of nothing but punctuation still gives three non-empty parts in every channel and tone', async () => {
    for (const objective of ['...........', '!?!?!?!?!?!?']) {
      for (const channel of CHANNELS) {
        for (const tone of TONES) assertWithinLimits(await generateOk(service, token, briefFor(segment.id, { channel, tone, objective })), channel);
      }
    }
  });

  test('a title cut to its limit does not end on a word that promised more ("... 15% off their")', async () => {
    const objective = 'Win back lapsing regulars with 15% off their next order this month';
    for (const tone of TONES) {
      const { title } = await generateOk(service, token, briefFor(segment.id, { channel: 'sms', tone, objective }));
      assert.doesNotMatch(title, /\b(their|the|a|an|to|for|with|of|on|and|your|our)$/i, `${tone}: ${title}`);
    }
  });

  test('is deterministic: the same request gives the same title, message and call to action', async () => {
    for (const channel of CHANNELS) {
      const body = briefFor(segment.id, { channel, tone: 'urgent', objective: LONG_OBJECTIVE });
      const first = await generateOk(service, token, body);
      const second = await generateOk(service, token, body);
      assert.notEqual(first.id, second.id);
      assert.deepEqual([second.title, second.message, second.callToAction], [first.title, first.message, first.callToAction]);
    }
  });

  test('writes in the tone: the four tones give four different messages and calls to action', async () => {
    for (const channel of CHANNELS) {
      const copies = [];
      for (const tone of TONES) copies.push(await generateOk(service, token, briefFor(segment.id, { channel, tone })));
      assert.equal(new Set(copies.map((c) => c.message)).size, 4, channel);
      assert.equal(new Set(copies.map((c) => c.callToAction)).size, 4, channel);
    }
  });
});
