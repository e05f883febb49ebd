// Copy the customer can receive (product.md section 14), from the local generator with no provider configured:
// it never restates the objective (6 consecutive words), never shows the targeting (countries, thresholds, the
// audience's size, "you are one of"), never cuts a word to fit, stays within every channel's limits, is
// deterministic, and its variants differ in opening and call to action. Revisions keep all of it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Brief } from '../src/campaigns/brief.ts';
import { fitCopy } from '../src/campaigns/fit.ts';
import { localCopy, offerIn } from '../src/campaigns/local-copy.ts';
import { LOCAL_PHRASES, THEME_WORDS, TONE_WORDS, URGENCY } from '../src/campaigns/local-phrases.ts';
import { localRevision, localVariants } from '../src/campaigns/local-revise.ts';
import type { Channel, Tone } from '../src/domain/campaigns.ts';
import { startService, type TestService } from './helpers.ts';
import { assertWithinLimits, CHANNELS, createSegment, generateOk, NO_RATE_LIMIT, OBJECTIVE, TONES, type Campaign } from './support/campaigns.ts';
import { createCustomer, customerRow } from './support/customers.ts';

const ISSUE_OBJECTIVE = 'Win back Kenyan customers who spent over 500 with 20% off their next order';
/** Its first six words are what one of the generator's own sentences would say: it must choose another. */
const ECHOING_OBJECTIVE = 'Enjoy 20% off your next order with us today, we want everyone to come back and shop again';
const OBJECTIVES = [
  ISSUE_OBJECTIVE,
  OBJECTIVE,
  ECHOING_OBJECTIVE,
  'Thank our most loyal customers in Kenya for their orders this year with free delivery',
  'Announce the new autumn collection to customers who have bought at least 3 times',
  'Ask recent buyers for feedback on their last order',
  'x'.repeat(10),
];

/** The words of a text, compared case-insensitively: letters, digits, %, currency signs and inner apostrophes. */
function words(text: string): string[] {
  return (text.toLowerCase().replaceAll('’', "'").match(/[\p{L}\p{N}%$€£']+/gu) ?? []).map((w) => w.replace(/^'+|'+$/g, '')).filter(Boolean);
}

/** The words with contractions and percentages spelled out, as a reader hears them: "we've" is "we have". */
function spelledOut(text: string): string[] {
  const spelled = words(text)
    .join(' ')
    .replace(/\bwon't\b/g, 'will not')
    .replace(/\bcan't\b/g, 'can not')
    .replace(/n't\b/g, ' not')
    .replace(/'ve\b/g, ' have')
    .replace(/'re\b/g, ' are')
    .replace(/'ll\b/g, ' will')
    .replace(/'d\b/g, ' would')
    .replace(/\b(it|that|there|here|what|now)'s\b/g, '$1 is')
    .replace(/(\d)%/g, '$1 percent');
  return spelled.split(' ').filter(Boolean);
}

/** The first run of 6 consecutive words of the objective found in the text, as typed or spelled out, or undefined. */
function sixWordsOf(objective: string, text: string): string | undefined {
  for (const form of [words, spelledOut]) {
    const source = form(objective);
    const runs = new Set(source.slice(0, Math.max(0, source.length - 5)).map((_, i) => source.slice(i, i + 6).join(' ')));
    const found = form(text);
    for (let i = 0; i + 6 <= found.length; i++) if (runs.has(found.slice(i, i + 6).join(' '))) return found.slice(i, i + 6).join(' ');
  }
  return undefined;
}

/** Every word the generator can write: its phrases without their slots. */
const VOCABULARY = new Set(LOCAL_PHRASES.flatMap((phrase) => words(phrase.replace(/\{\w+\}/g, ' '))));

const allText = (c: { title: string; message: string; callToAction: string }) => `${c.title}\n${c.message}\n${c.callToAction}`;
/** The message up to its first full stop, question or exclamation mark: an email's greeting and its first sentence. */
const firstSentence = (message: string) => /^[^.!?]*[.!?]/.exec(message)?.[0] ?? message;

/** Asserts no word of the copy was cut: each is the generator's or the offer's, and the message ends where a sentence does. */
function assertNoCutWord(copy: Campaign | { title: string; message: string; callToAction: string }, channel: Channel, objective: string, extra: string[] = []) {
  const allowed = new Set([...VOCABULARY, ...words(offerIn(objective)?.deal ?? ''), ...extra]);
  const foreign = words(allText(copy)).filter((w) => !allowed.has(w));
  assert.deepEqual(foreign, [], `words that are no phrase's: ${JSON.stringify(copy)}`);
  assert.doesNotMatch(allText(copy), /…|\.\.\./, 'no ellipsis');
  const body = channel === 'email' ? copy.message : copy.message.slice(0, -copy.callToAction.length).trimEnd();
  assert.ok(channel === 'email' ? /The team$/.test(body) : /[.!?]$/.test(body), `the message ends on a whole sentence: ${copy.message}`);
  assert.ok(channel === 'email' || copy.message.endsWith(` ${copy.callToAction}`), `the call to action closes the ${channel} message`);
}

let service: TestService;
let token: string;
/** Kenya, spent more than 100: 12 customers (3 who spent 50 fall out). */
let kenya: { id: string; matchCount: number };
/** Ghana, at least 3 purchases, inactive for at least 30 days: 5 customers. */
let ghana: { id: string; matchCount: number };
const TARGETING = [
  { segment: () => kenya, forbidden: ['kenya', 'kenyan', 'kenyans', '100', '12', 'customers', 'customer'] },
  { segment: () => ghana, forbidden: ['ghana', 'ghanaian', '3', '30', '5', 'customers', 'customer', 'inactive'] },
];
/** Every campaign drafted in `before`: each objective, channel and tone, for both segments. */
const drafted: { campaign: Campaign; forbidden: string[] }[] = [];

before(async () => {
  service = await startService({ env: NO_RATE_LIMIT });
  token = await service.tokenFor('lifecycle_marketer');
  for (let i = 0; i < 12; i++) await createCustomer(service, token, customerRow({ country: 'Kenya', totalAmountSpent: 150 }));
  for (let i = 0; i < 3; i++) await createCustomer(service, token, customerRow({ country: 'Kenya', totalAmountSpent: 50 }));
  for (let i = 0; i < 5; i++) await createCustomer(service, token, customerRow({ country: 'Ghana', totalTransactions: 4, lastActivityDate: '2026-09-01T00:00:00.000Z' }));
  kenya = await createSegment(service, token, 'Kenyan big spenders', [{ field: 'country', operator: 'eq', value: 'Kenya' }, { field: 'totalAmountSpent', operator: 'gt', value: 100 }]);
  ghana = await createSegment(service, token, 'Ghana regulars gone quiet', [
    { field: 'country', operator: 'eq', value: 'Ghana' },
    { field: 'totalTransactions', operator: 'gte', value: 3 },
    { field: 'lastActivityDays', operator: 'gte', value: 30 },
  ]);
  assert.deepEqual([kenya.matchCount, ghana.matchCount], [12, 5]);
  for (const { segment, forbidden } of TARGETING) {
    for (const objective of OBJECTIVES) {
      for (const channel of CHANNELS) {
        for (const tone of TONES) drafted.push({ campaign: await generateOk(service, token, { segmentId: segment().id, objective, channel, tone }), forbidden });
      }
    }
  }
});
after(() => service.close());

describe('a first draft by the local generator', () => {
  test('is written by the local generator', () => {
    assert.equal(drafted.length, 2 * OBJECTIVES.length * CHANNELS.length * TONES.length);
    for (const { campaign } of drafted) assert.equal(campaign.model, 'local');
  });

  test('never holds 6 consecutive words of the objective, in any channel and tone', () => {
    for (const { campaign } of drafted) assert.equal(sixWordsOf(campaign.objective, allText(campaign)), undefined, JSON.stringify(campaign));
  });

  test("never mentions the targeting: the conditions' countries and numbers, the audience's size, \"you are one of\"", () => {
    for (const { campaign, forbidden } of drafted) {
      const found = words(allText(campaign)).filter((w) => forbidden.includes(w));
      assert.deepEqual(found, [], JSON.stringify(campaign));
      assert.doesNotMatch(allText(campaign), /you are one of|customers who spent|one of \d/i);
    }
  });

  test("never cuts a word: every word is one of the generator's or the offer's, sentences whole, no ellipsis", () => {
    for (const { campaign } of drafted) assertNoCutWord(campaign, campaign.channel, campaign.objective);
  });

  test("stays within every channel's limits without needing a cut: fitting it to the channel changes nothing", () => {
    for (const { campaign } of drafted) {
      assertWithinLimits(campaign, campaign.channel);
      const copy = { title: campaign.title, message: campaign.message, callToAction: campaign.callToAction };
      assert.deepEqual(fitCopy(copy, campaign.channel), copy);
    }
  });

  test('carries an offer the objective names as an offer, not as the instruction around it', () => {
    for (const { campaign } of drafted.filter((d) => d.campaign.objective === ISSUE_OBJECTIVE)) {
      assert.match(campaign.message, /20% off your next order/, campaign.message);
      assert.doesNotMatch(allText(campaign), /their next|win back/i);
    }
    for (const { campaign } of drafted.filter((d) => d.campaign.objective.endsWith('free delivery'))) assert.match(campaign.message, /free delivery/i, campaign.message);
  });

  test('is deterministic: two identical requests give identical copy', async () => {
    for (const channel of CHANNELS) {
      for (const tone of TONES) {
        const body = { segmentId: kenya.id, objective: ISSUE_OBJECTIVE, channel, tone };
        const [first, second] = [await generateOk(service, token, body), await generateOk(service, token, body)];
        assert.notEqual(first.id, second.id);
        assert.deepEqual([second.title, second.message, second.callToAction], [first.title, first.message, first.callToAction]);
      }
    }
  });

  test("chooses its words from the audience: lapsed or churned customers are welcomed back, frequent buyers thanked", () => {
    const brief = (audience: string, channel: Channel = 'sms', tone: Tone = 'professional'): Brief => ({ audience, audienceSize: 40, objective: 'Tell people about what we have in store this month', channel, tone });
    for (const audience of ['customers who are churned', 'customers in Ghana inactive for at least 90 days', 'customers who are inactive or churned']) {
      assert.match(localCopy(brief(audience)).message, /^We've missed you\./, audience);
    }
    assert.match(localCopy(brief('customers with at least 10 purchases')).message, /^Thank you for shopping with us\./);
    assert.match(localCopy(brief('customers in Ghana')).message, /^We have some news for you\./);
    // The Ghana segment (inactive for at least 30 days) gets a win-back whatever the objective's wording.
    const quiet = drafted.find((d) => d.campaign.segmentId === ghana.id && d.campaign.objective === 'x'.repeat(10) && d.campaign.tone === 'professional')!;
    assert.match(quiet.campaign.message, /We've missed you\./);
  });
});

describe('variants and revisions by the local generator', () => {
  const variants = async (id: string, count: number, instruction?: string) => {
    const reply = await service.request('POST', `/v1/campaigns/${id}/variants`, { token, body: instruction ? { count, instruction } : { count } });
    assert.equal(reply.status, 200, reply.text);
    return reply.body.variants as Campaign[];
  };

  test('3 variants differ from the draft and from each other in their opening and call to action, in every channel and tone', async () => {
    for (const channel of CHANNELS) {
      for (const tone of TONES) {
        const campaign = await generateOk(service, token, { segmentId: kenya.id, objective: ISSUE_OBJECTIVE, channel, tone });
        const all = [campaign, ...(await variants(campaign.id, 3))];
        assert.equal(new Set(all.map((c) => firstSentence(c.message))).size, 4, `${channel} ${tone} openings: ${all.map((c) => firstSentence(c.message)).join(' | ')}`);
        assert.equal(new Set(all.map((c) => c.callToAction)).size, 4, `${channel} ${tone} calls to action: ${all.map((c) => c.callToAction).join(' | ')}`);
        for (const v of all) {
          assertWithinLimits(v, channel);
          assertNoCutWord(v, channel, ISSUE_OBJECTIVE);
          assert.equal(sixWordsOf(ISSUE_OBJECTIVE, allText(v)), undefined);
        }
      }
    }
  });

  test('revisions, one after another, keep every rule: no restated objective, no targeting, no cut word, within limits', async () => {
    const instructions = ['shorter', 'more urgent', 'longer', 'less urgent', 'more professional', 'more promotional', 'friendlier', 'no emoji', 'shorter', 'shorter'];
    for (const channel of CHANNELS) {
      const campaign = await generateOk(service, token, { segmentId: kenya.id, objective: ISSUE_OBJECTIVE, channel, tone: 'friendly' });
      for (const instruction of instructions) {
        const reply = await service.request('POST', `/v1/campaigns/${campaign.id}/revise`, { token, body: { instruction } });
        assert.equal(reply.status, 200, reply.text);
        const revised = reply.body as Campaign;
        assertWithinLimits(revised, channel);
        assertNoCutWord(revised, channel, ISSUE_OBJECTIVE);
        assert.equal(sixWordsOf(ISSUE_OBJECTIVE, allText(revised)), undefined, `${channel} ${instruction}`);
        assert.deepEqual(words(allText(revised)).filter((w) => TARGETING[0]!.forbidden.includes(w)), [], `${channel} ${instruction}`);
      }
    }
  });

  test('"shorter" drops whole sentences of copy the generator did not write, never a part of one', () => {
    const brief: Brief = { audience: 'customers in Kenya', audienceSize: 12, objective: ISSUE_OBJECTIVE, channel: 'sms', tone: 'friendly' };
    const sentences = ['Our autumn range has landed in store and online.', 'Every coat is made to last for years.', 'Come and try one on this weekend.', 'Delivery is free all month.'];
    const copy = { title: 'Autumn is here', message: `${sentences.join(' ')} Shop now`, callToAction: 'Shop now' };
    const shorter = localRevision({ brief, copy }, 'shorter');
    const kept = shorter.message.slice(0, -' Shop now'.length).match(/[^.]+\./g)!.map((s) => s.trim());
    assert.ok(kept.length < sentences.length && kept.every((s) => sentences.includes(s)), shorter.message);
    assert.equal(shorter.title, copy.title);
  });
});

/** Objectives a reviewer found restated across sentence boundaries: each shares 6 words with two of the generator's sentences. */
const REVIEWED_OBJECTIVES = [
  'We have missed you. Come back and enjoy 20 percent off',
  "we've missed you come back and grab 20% off",
  'Get feedback: how are we doing? we would love to hear from you, it only takes a moment',
];

describe('the local generator reads its assembled copy, not each phrase alone', () => {
  test('the reviewed objectives get no 6 consecutive words back in a draft, its variants or its revisions, in any channel and tone', async () => {
    for (const objective of REVIEWED_OBJECTIVES) {
      for (const channel of CHANNELS) {
        for (const tone of TONES) {
          const campaign = await generateOk(service, token, { segmentId: kenya.id, objective, channel, tone });
          assert.equal(campaign.model, 'local');
          assert.equal(sixWordsOf(objective, allText(campaign)), undefined, `${channel} ${tone}: ${JSON.stringify(campaign)}`);
          assertNoCutWord(campaign, channel, objective);
          const reply = await service.request('POST', `/v1/campaigns/${campaign.id}/variants`, { token, body: { count: 3 } });
          assert.equal(reply.status, 200, reply.text);
          for (const variant of reply.body.variants as Campaign[]) assert.equal(sixWordsOf(objective, allText(variant)), undefined, `${channel} ${tone} variant: ${JSON.stringify(variant)}`);
          for (const instruction of ['longer', 'more urgent', 'shorter']) {
            const revised = await service.request('POST', `/v1/campaigns/${campaign.id}/revise`, { token, body: { instruction } });
            assert.equal(revised.status, 200, revised.text);
            assert.equal(sixWordsOf(objective, allText(revised.body)), undefined, `${channel} ${tone} ${instruction}: ${revised.text}`);
          }
        }
      }
    }
  });

  test('a contraction counts as its spelled-out words: "We\'d love to hear from you" restates "we would love to hear from you"', () => {
    const objective = 'Ask for feedback, we would love to hear from you about it';
    for (const channel of CHANNELS) {
      for (const tone of TONES) {
        const copy = localCopy({ audience: 'customers', audienceSize: 4, objective, channel, tone });
        assert.doesNotMatch(allText(copy), /we'd love to hear from you/i, `${channel} ${tone}`);
      }
    }
  });

  test('objectives built from 2 or 3 of its own sentences, with and without punctuation, never get 6 consecutive words back', () => {
    const offer = { text: '20% off', deal: '20% off your next order' };
    const filled = (phrase: string) => phrase.replaceAll('{offer}', offer.text).replaceAll('{Offer}', '20% off').replaceAll('{deal}', offer.deal).replaceAll('{Deal}', '20% off your next order');
    const themes = Object.values(THEME_WORDS);
    const sentencesOf = (w: (typeof themes)[number]) => [...w.openings, ...w.bodies.offer, ...w.bodies.plain, w.extra].map(filled);
    const shared = [...Object.values(TONE_WORDS).flatMap((w) => w.closings), URGENCY.offer, URGENCY.plain];
    // A fixed pseudo-random sequence: the same objectives on every run, spread over every theme's sentences.
    const OBJECTIVE_COUNT = 120;
    let seed = 7;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const audiences = ['customers', 'customers who are churned', 'customers with at least 10 purchases'];
    let checked = 0;
    for (let i = 0; i < OBJECTIVE_COUNT; i++) {
      const own = sentencesOf(themes[next(themes.length)]!);
      const pool = next(3) === 0 ? [...own, ...shared, ...sentencesOf(themes[next(themes.length)]!)] : own;
      const picked = Array.from({ length: 2 + next(2) }, () => pool[next(pool.length)]!);
      const punctuated = picked.join(' ');
      for (const objective of [punctuated, punctuated.replace(/[.!?,:]/g, '').toLowerCase()]) {
        for (const channel of CHANNELS) {
          for (const tone of TONES) {
            const brief: Brief = { audience: audiences[i % audiences.length]!, audienceSize: 9, objective, channel, tone };
            const draft = localCopy(brief);
            // Revising re-reads the plan (dozens of drafts): one tone per objective and channel keeps the run short.
            const revised = tone === TONES[i % TONES.length] ? [...localVariants({ brief, copy: draft }, 3, undefined), localRevision({ brief, copy: draft }, 'longer'), localRevision({ brief, copy: draft }, 'more urgent')] : [];
            const all = [draft, ...revised];
            for (const copy of all) {
              assert.equal(sixWordsOf(objective, allText(copy)), undefined, `${objective} / ${channel} ${tone}: ${JSON.stringify(copy)}`);
              assertWithinLimits(copy, channel);
              checked++;
            }
          }
        }
      }
    }
    assert.equal(checked, OBJECTIVE_COUNT * 2 * CHANNELS.length * (TONES.length + 5));
  });

  test('urgent copy without an offer says nothing that needs one: no "it" left without a referent', () => {
    for (const channel of CHANNELS) {
      const copy = localCopy({ audience: 'customers', audienceSize: 4, objective: 'Tell people about what we have in store this month', channel, tone: 'urgent' });
      assert.doesNotMatch(copy.message, /\bit won't be around\b/i, copy.message);
      if (channel !== 'push') assert.match(copy.message, /The sooner, the better\./, copy.message);
    }
  });
});
