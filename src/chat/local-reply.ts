// The local generator's answers: short, deterministic replies from the same live facts the prompt carries, for the
// questions a marketing team asks most. Anything else gets an overview with what to ask next, never an apology.
import { describeCondition, type Condition } from '../domain/segments.ts';
import type { Grounding, SegmentFact } from './grounding.ts';
import { baseInWords, customers, money, percent, segmentInWords, shareOf, whole } from './wording.ts';

type Topic = 'campaign' | 'segments' | 'risk' | 'top' | 'trend' | 'health';

const RISK_WORDS = /\b(risk\w*|churn\w*|stale|inactive|lapsed|idle|dormant|lost|losing|retention)\b/;

/** Words that point at a topic, checked in this order: "what should I send to the at-risk segment" is a campaign question. */
const TOPICS: readonly [Topic, RegExp][] = [
  ['campaign', /\b(send|campaign|message|email|e-mail|sms|text|push|offer|promot\w*|target|win[- ]?back|re-?engage\w*)\b/],
  ['segments', /\b(segments?|largest|biggest|smallest|audiences?)\b/],
  ['risk', RISK_WORDS],
  ['top', /\b(top|best|vip|vips|valuable|value|spend\w*|spent|revenue|big spenders?|loyal)\b/],
  ['trend', /\b(trend\w*|months?|monthly|growth|growing|recent\w*|activity)\b/],
  ['health', /\b(health\w*|overall|doing|kpis?|overview|summary|status|score)\b/],
];

/** Returns the local assistant's reply to `question`, from the facts in `g`; the same facts and question give the same text. */
export function localReply(g: Grounding, question: string): string {
  const q = question.toLowerCase();
  const named = namedSegment(g.segments, q);
  const topic = TOPICS.find(([, words]) => words.test(q))?.[0];
  if (g.kpis.totalCustomers === 0) return emptyBase(g);
  switch (topic) {
    case 'campaign':
      return campaignFor(g, named ?? (RISK_WORDS.test(q) ? undefined : g.segments[0]), q);
    case 'segments':
      return named ? segmentDetail(g, named) : segmentRanking(g);
    case 'risk':
      return risk(g);
    case 'top':
      return topCustomers(g);
    case 'trend':
      return trend(g);
    case 'health':
      return health(g);
    default:
      return named ? segmentDetail(g, named) : overview(g);
  }
}

/** The saved segment whose name the question (in lower case) mentions (the longest such name), if any. */
export function namedSegment(segments: readonly SegmentFact[], q: string): SegmentFact | undefined {
  return segments.filter((s) => q.includes(s.name.toLowerCase())).sort((a, b) => b.name.length - a.name.length)[0];
}

function health(g: Grounding): string {
  const { health: h } = g;
  const drag =
    h.churnedShare >= 20
      ? `Churn is the biggest drag (${percent(h.churnedShare)} of the base).`
      : h.staleActives > h.inactiveCount
        ? `The biggest risk is the ${customers(h.staleActives)} still marked active but idle for more than 60 days.`
        : `The biggest drag is the ${customers(h.inactiveCount)} who are inactive.`;
  const [counts, value, score] = baseInWords(g);
  return [
    score!,
    counts!,
    value!,
    drag,
    'Next step: ask me what to send to your at-risk customers, or which segment is largest.',
  ].join('\n');
}

function risk(g: Grounding): string {
  const { kpis, health: h } = g;
  const atRisk = h.inactiveCount + h.staleActives;
  return [
    `${customers(atRisk)} are at risk: ${whole(h.inactiveCount)} inactive and ${whole(h.staleActives)} marked active but idle for more than 60 days ` +
      `(${percent(shareOf(atRisk, kpis.totalCustomers))} of the base).`,
    `${customers(kpis.statusCounts.churned)} ${kpis.statusCounts.churned === 1 ? 'has' : 'have'} already churned (${percent(h.churnedShare)}).`,
    h.staleActives > 0
      ? 'Next step: a win-back email to the idle actives first — they have not left yet, so a reminder with a reason to return works best.'
      : 'Next step: a re-engagement email to the inactive customers, with a time-limited incentive.',
  ].join('\n');
}

function topCustomers(g: Grounding): string {
  const { top } = g;
  const first = top.items[0];
  if (!first) return overview(g);
  const sum = top.items.reduce((n, c) => n + c.totalAmountSpent, 0);
  const lines = top.items.map((c) => `${c.rank}. ${money(c.totalAmountSpent)} over ${whole(c.totalTransactions)} purchases (${c.country}, ${c.status})`);
  return [
    `Your top ${top.items.length} customers spent ${money(sum)} together, ${percent(shareOf(sum, top.totalValue))} of the base's lifetime value of ${money(top.totalValue)}.`,
    ...lines,
    `The average customer is worth ${money(g.kpis.averageCustomerValue)}.`,
    `Next step: save a VIP segment (spent at least ${money(top.items[top.items.length - 1]!.totalAmountSpent)}) and send it early access or a loyalty reward.`,
  ].join('\n');
}

function trend(g: Grounding): string {
  const lines = g.trend.map((p) => `${p.month}: ${customers(p.customers)} last active, ${whole(p.churned)} churned, value ${money(p.value)}`);
  const latest = g.trend[g.trend.length - 1];
  const before = g.trend[g.trend.length - 2];
  const direction =
    latest && before ? (latest.customers > before.customers ? 'up from' : latest.customers < before.customers ? 'down from' : 'level with') : undefined;
  return [
    `Customers by the month of their last activity, last ${g.trend.length} months:`,
    ...lines,
    ...(latest && before && direction ? [`This month is ${direction} last month (${whole(latest.customers)} against ${whole(before.customers)}).`] : []),
  ].join('\n');
}

function segmentRanking(g: Grounding): string {
  const [largest, ...rest] = g.segments;
  if (!largest) return 'There are no saved segments yet. Save one (for example, customers inactive for more than 60 days) and I can compare them.';
  return [
    `The largest saved segment is ${segmentInWords(largest)}, ${percent(shareOf(largest.size, g.kpis.totalCustomers))} of the base.`,
    ...(rest.length ? ['Next largest:', ...rest.slice(0, 2).map((s) => `- ${segmentInWords(s)}`)] : []),
    `You have ${whole(g.segments.length)} saved segment${g.segments.length === 1 ? '' : 's'}. Sizes are as of their last save.`,
  ].join('\n');
}

function segmentDetail(g: Grounding, segment: SegmentFact): string {
  return [
    `${segmentInWords(segment)}: ${percent(shareOf(segment.size, g.kpis.totalCustomers))} of the base.`,
    `Ask me what to send to “${segment.name}” for a campaign idea.`,
  ].join('\n');
}

/** Whether a status condition leaves only customers who are inactive or churned. */
const lapsedOnly = (x: Condition) => x.field === 'status' && (x.operator === 'neq' ? x.value === 'active' : [x.value].flat().every((s) => s !== 'active'));

/** A campaign idea for the segment, chosen by what its conditions say about the audience. */
function campaignFor(g: Grounding, segment: SegmentFact | undefined, q: string): string {
  if (!segment) {
    const idle = g.health.staleActives + g.health.inactiveCount;
    return [
      `For the ${customers(idle)} at risk (${whole(g.health.inactiveCount)} inactive, ${whole(g.health.staleActives)} idle but marked active): a win-back email with a time-limited incentive and one clear call to action.`,
      g.segments.length
        ? 'Save a segment such as "inactive for more than 60 days" to draft it, or name one of your segments and I will suggest a campaign for it.'
        : 'Save a segment such as "inactive for more than 60 days" and draft the campaign for it.',
    ].join('\n');
  }
  const c = segment.conditions;
  const idle = c.some((x) => (x.field === 'lastActivityDays' && (x.operator === 'gt' || x.operator === 'gte')) || lapsedOnly(x));
  const recent = c.some((x) => x.field === 'lastActivityDays' && (x.operator === 'lt' || x.operator === 'lte'));
  const valuable = c.some((x) => (x.field === 'totalAmountSpent' || x.field === 'totalTransactions') && (x.operator === 'gt' || x.operator === 'gte'));
  // The countries the audience is in ("in Kenya or Nigeria"); one it is outside of says nothing about the readers.
  const country = c.find((x) => x.field === 'country' && x.operator !== 'neq');
  const channel = /\bsms|text\b/.test(q) ? 'an SMS' : /\bpush\b/.test(q) ? 'a push notification' : 'an email';
  const idea = idle
    ? `${channel} that wins them back: remind them what they liked, give one time-limited reason to return, and keep a single call to action.`
    : valuable
      ? `${channel} that rewards loyalty: early access or a members-only perk rather than a discount, in a professional or friendly tone.`
      : recent
        ? `${channel} that builds on recent interest: a next-purchase suggestion or a small bundle offer while they are engaged.`
        : `${channel} with your current best offer, in a friendly tone, and one clear call to action.`;
  return [
    `For ${segmentInWords(segment)}: ${idea}`,
    ...(country ? [`Write it for readers ${describeCondition(country)}: local dates, holidays and currency.`] : []),
    `Draft it in the campaign generator with “${segment.name}” as the segment; ${percent(shareOf(segment.size, g.kpis.totalCustomers))} of the base will get it.`,
  ].join('\n');
}

function overview(g: Grounding): string {
  const largest = g.segments[0];
  return [
    'Here is where the base stands.',
    ...baseInWords(g),
    ...(largest ? [`Largest saved segment: ${segmentInWords(largest)}.`] : ['No segments are saved yet.']),
    'You can ask me about overall health, customers at risk, the largest segments, your top customers, the monthly trend, or what to send to a segment.',
  ].join('\n');
}

function emptyBase(g: Grounding): string {
  return [
    'There are no customers yet, so there is nothing to analyse.',
    'Import customers (POST /v1/customers/import) or create them one by one, then ask me about health, risk, segments or campaigns.',
    ...(g.segments.length ? [`You already have ${whole(g.segments.length)} saved segment${g.segments.length === 1 ? '' : 's'}; their sizes will follow the data.`] : []),
  ].join('\n');
}
