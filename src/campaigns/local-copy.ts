// The local generator: deterministic campaign copy written to the customer, without a model. It reads a theme and an
// offer from the brief and writes only whole phrases of its own (local-phrases.ts), choosing shorter ones where a
// channel has less room, so it never restates the objective, shows the targeting or cuts a word.
import { CHANNEL_LIMITS, TONES, type CampaignCopy, type Tone } from '../domain/campaigns.ts';
import type { Brief } from './brief.ts';
import { fitCopy } from './fit.ts';
import { copyText, restatementOf } from './restatement.ts';
import { EMAIL_EXTRA, FALLBACK_TITLE, SIGNATURE, THEME_WORDS, TONE_WORDS, URGENCY, type Theme } from './local-phrases.ts';

/** An offer read from the objective: as a phrase ("20% off") and on the next order ("20% off your next order"). */
export interface Offer {
  text: string;
  deal: string;
}

export const LENGTHS = ['short', 'standard', 'long'] as const;
export type Length = (typeof LENGTHS)[number];

/** How one copy is written from a brief: the tone, which of the four variants, how long, and words to mention. */
export interface Plan {
  tone: Tone;
  variant: number;
  length: Length;
  mention?: string;
}

/** The number of distinct variants: every theme has four openings, titles and calls to action. */
export const VARIANT_COUNT = 4;

/** The copy a brief gets first: its own tone, the first variant, standard length. */
export const firstPlan = (brief: Brief): Plan => ({ tone: brief.tone, variant: 0, length: 'standard' });

const OFFERS: { pattern: RegExp; offer: (m: RegExpExecArray) => Offer }[] = [
  { pattern: /(?<![\d.])(\d{1,2}(?:\.\d)?)\s?(?:%|percent\b|per cent\b)\s*(?:off|discount)\b/i, offer: (m) => off(`${m[1]}%`) },
  { pattern: /\b(?:discount|saving|savings) of (\d{1,2}(?:\.\d)?)\s?(?:%|percent\b|per cent\b)/i, offer: (m) => off(`${m[1]}%`) },
  { pattern: /([$€£])\s?(\d{1,4}(?:\.\d\d)?)\s*off\b/i, offer: (m) => off(`${m[1]}${m[2]}`) },
  { pattern: /\bfree (delivery|shipping|returns)\b/i, offer: (m) => ({ text: `free ${m[1]!.toLowerCase()}`, deal: `free ${m[1]!.toLowerCase()} on your next order` }) },
  { pattern: /\bfree gifts?\b/i, offer: () => ({ text: 'a free gift', deal: 'a free gift with your next order' }) },
  { pattern: /\bdouble (?:loyalty |reward )?points\b/i, offer: () => ({ text: 'double points', deal: 'double points on your next order' }) },
];

function off(amount: string): Offer {
  return { text: `${amount} off`, deal: `${amount} off your next order` };
}

/** Returns the offer the objective names (a percentage or an amount off, free delivery, a gift, double points), or undefined. */
export function offerIn(objective: string): Offer | undefined {
  for (const { pattern, offer } of OFFERS) {
    const found = pattern.exec(objective);
    if (found) return offer(found);
  }
  return undefined;
}

/** Themes the objective names, first match wins ("win back ... with a discount" is a win-back). */
const OBJECTIVE_THEMES: [Theme, RegExp][] = [
  ['feedback', /\b(feedback|surveys?|reviews?|opinions?|rate us|ratings?)\b/i],
  ['launch', /\b(launch\w*|new (?:collection|arrivals?|range|products?|season|menu|line|release)|introduc\w*|just (?:landed|arrived)|announc\w*)\b/i],
  ['winback', /\b(win(?:ning)?[- ]?(?:\w+ )?back|re-?engag\w*|re-?activat\w*|laps(?:ed|ing)|churn\w*|dormant|inactive|come back|bring (?:\w+ )?back|miss(?:ed)? (?:you|them)|stopped (?:buying|ordering|shopping))\b/i],
  ['welcome', /\b(welcome(?! back)|onboard\w*|first (?:order|purchase)|new (?:customers|sign-?ups|subscribers|members))\b/i],
  ['loyalty', /\b(loyal\w*|thank\w*|vips?|rewards?|best customers|appreciat\w*|regulars|anniversary)\b/i],
  ['sale', /\b(sales?|discount\w*|deals?|promo\w*|clearance|black friday|cyber monday)\b/i],
];

/** The theme the audience's conditions (in the words of describeAudience) suggest, or undefined. */
function audienceTheme(audience: string): Theme | undefined {
  if (/\bwho are (?:inactive|churned)(?: or (?:inactive|churned))?\b|\bwho are not active\b|\binactive for (?:more than|at least) /.test(audience)) return 'winback';
  const purchases = /\bwith (more than|at least|fewer than|at most) ([\d,]+) purchases?\b/.exec(audience);
  const count = purchases ? Number(purchases[2]!.replaceAll(',', '')) : NaN;
  if (purchases && /more|least/.test(purchases[1]!) && count >= 3) return 'loyalty';
  if (purchases && /fewer|most/.test(purchases[1]!) && count <= 2) return 'welcome';
  if (/\bwho spent (?:more than|at least) /.test(audience)) return 'loyalty';
  return undefined;
}

/** Returns what the copy is about: the objective's theme, else the audience's, else general. */
export function themeOf(brief: Brief): Theme {
  return OBJECTIVE_THEMES.find(([, pattern]) => pattern.test(brief.objective))?.[0] ?? audienceTheme(brief.audience) ?? 'general';
}

const upperFirst = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

function withOffer(phrase: string, offer: Offer | undefined): string {
  if (!offer) return phrase;
  return phrase.replaceAll('{offer}', offer.text).replaceAll('{Offer}', upperFirst(offer.text)).replaceAll('{deal}', offer.deal).replaceAll('{Deal}', upperFirst(offer.deal));
}

/** The phrases from `start` on (going round the list) that `fit`, in that order. */
function from(phrases: readonly string[], start: number, fits: (text: string) => boolean): string[] {
  return phrases.map((_, i) => phrases[(start + i) % phrases.length]!).filter(fits);
}

/** Returns the words to mention as a sentence of their own. */
export function mentionSentence(words: string): string {
  const text = upperFirst(words.trim());
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** The parts of a copy that change; `fixed` marks the ones that do not (greeting, sign-off). */
const PARTS = ['title', 'action', 'opening', 'mention', 'body', 'extra', 'closing', 'urgency', 'emailExtra'] as const;
type Part = (typeof PARTS)[number];
/** Which part to change first when the copy restates: sentences before the opening and action variants differ in. */
const CHANGE_FIRST: Part[] = ['body', 'extra', 'closing', 'urgency', 'emailExtra', 'title', 'opening', 'action', 'mention'];
type Segment = { part: Part | 'fixed'; text: string };

/** Adds sentences by priority while they fit in `room` characters, then returns them in reading order. */
function fill(sentences: (Segment & { priority: number })[], room: number): Segment[] {
  const chosen = new Set<number>();
  let used = -1;
  const byPriority = sentences.map((s, i) => ({ ...s, i })).sort((a, b) => a.priority - b.priority);
  for (const s of byPriority) {
    if (used + 1 + s.text.length > room) continue;
    chosen.add(s.i);
    used += 1 + s.text.length;
  }
  return sentences.filter((_, i) => chosen.has(i));
}

/** Returns the copy the plan writes for the brief: the same brief and plan always give the same text. */
export function writeCopy(brief: Brief, plan: Plan): CampaignCopy {
  const theme = THEME_WORDS[themeOf(brief)];
  const tone = TONE_WORDS[plan.tone];
  const offer = offerIn(brief.objective);
  const kind = offer ? 'offer' : 'plain';
  const limits = CHANNEL_LIMITS[brief.channel];
  const at = plan.variant + tone.offset;
  const restatedIn = restatementOf(brief.objective);
  const own = (max: number) => (text: string) => text.length <= max && !restatedIn([text]);
  const phrases = (list: readonly string[]) => list.map((phrase) => withOffer(phrase, offer));
  const sentence = own(limits.message);
  const fuller = plan.length !== 'short';
  const urgentActions = (action: string) => {
    const urgent = `${action} ${URGENCY.actionSuffix}`;
    return plan.tone === 'urgent' && !/\b(now|today)$/i.test(action) && own(limits.callToAction)(urgent) ? [urgent, action] : [action];
  };
  // Each part's phrases in the order tried: the plan's own first, then others, then (where it may) none at all.
  const choices: Record<Part, (string | undefined)[]> = {
    title: [...new Set([...from(phrases(theme.titles[kind]), at, own(limits.title)), ...from(theme.titles.plain, at, own(limits.title)), FALLBACK_TITLE])],
    action: [...new Set([...from(phrases(theme.actions[kind]), at, own(limits.callToAction)), ...from(theme.actions.plain, at, own(limits.callToAction))].flatMap(urgentActions))],
    opening: [...from(theme.openings, at, sentence).map((s) => s.replace(/\.$/, tone.exclaims ? '!' : '.')), undefined],
    mention: plan.mention ? [mentionSentence(plan.mention), undefined] : [undefined],
    body: [...new Set([...from(phrases(theme.bodies[kind]), plan.variant, sentence), ...from(theme.bodies.plain, plan.variant, sentence)]), undefined],
    extra: plan.length === 'long' ? [theme.extra, undefined] : [undefined],
    closing: fuller ? [...from(tone.closings, plan.variant, sentence), undefined] : [undefined],
    urgency: fuller && plan.tone === 'urgent' ? [offer ? URGENCY.offer : URGENCY.plain, undefined] : [undefined],
    emailExtra: brief.channel === 'email' && plan.length === 'long' ? [EMAIL_EXTRA, undefined] : [undefined],
  };
  const write = (chosen: Record<Part, number>) => {
    const get = (part: Part): Segment[] => {
      const text = choices[part][chosen[part]];
      return text === undefined ? [] : [{ part, text }];
    };
    const title = get('title')[0]!;
    const action = get('action')[0]!;
    if (brief.channel === 'email') {
      const paragraphs = [[{ part: 'fixed', text: tone.greeting } as Segment], ['opening', 'mention', 'body', 'extra'].flatMap((p) => get(p as Part)), ['closing', 'urgency', 'emailExtra'].flatMap((p) => get(p as Part))];
      const signed = paragraphs.filter((p) => p.length > 0).concat([[{ part: 'fixed', text: `${tone.signOff}\n${SIGNATURE}` }]]);
      const message = signed.map((p) => p.map((s) => s.text).join(' ')).join('\n\n');
      return { copy: fitCopy({ title: title.text, message, callToAction: action.text }, brief.channel), segments: [title, ...signed.flat(), action] };
    }
    // Whole sentences by priority in the room the call to action leaves: a short channel gets fewer of them.
    const order: Part[] = ['opening', 'mention', 'body', 'closing', 'urgency', 'extra'];
    const priority: Partial<Record<Part, number>> = { mention: 0, body: 1, opening: 2, closing: 3, urgency: 4, extra: 5 };
    const body = fill(order.flatMap((p) => get(p).map((s) => ({ ...s, priority: priority[p]! }))), limits.message - action.text.length - 1);
    const message = [...body, action].map((s) => s.text).join(' ');
    return { copy: fitCopy({ title: title.text, message, callToAction: action.text }, brief.channel), segments: [title, ...body, action, action] };
  };
  const chosen = Object.fromEntries(PARTS.map((p) => [p, 0])) as Record<Part, number>;
  const restated = (draft: ReturnType<typeof write>) => restatedIn(draft.segments.map((s) => s.text))?.map((i) => draft.segments[i]!.part);
  // Each step changes one part the restated run spans to its next phrase, so the search ends.
  for (;;) {
    const draft = write(chosen);
    const spanned = restated(draft);
    if (!spanned) return draft.copy;
    const part = CHANGE_FIRST.find((p) => spanned.includes(p) && chosen[p] < choices[p].length - 1);
    if (!part) break;
    chosen[part]++;
  }
  // The last resort: no sentence but the fixed ones, with any title and call to action that do not restate it.
  const bare = Object.fromEntries(PARTS.map((p) => [p, choices[p].length - 1])) as Record<Part, number>;
  for (let title = 0; title < choices.title.length; title++) {
    for (let action = 0; action < choices.action.length; action++) {
      const draft = write({ ...bare, title, action });
      if (!restated(draft)) return draft.copy;
    }
  }
  return write(bare).copy;
}

/** Returns campaign copy for the brief, written to the customer, deterministic and within the channel's limits. */
export function localCopy(brief: Brief): CampaignCopy {
  return writeCopy(brief, firstPlan(brief));
}

const same = (a: CampaignCopy, b: CampaignCopy) => a.title === b.title && a.message === b.message && a.callToAction === b.callToAction;

/**
 * Returns the plan that writes exactly this copy for the brief (the local generator's own copy, unedited), or
 * undefined for copy written or edited by anyone else.
 */
export function planOf(brief: Brief, copy: CampaignCopy): Plan | undefined {
  const sentences = copy.message.match(/[^.!?\n]+[.!?]+/g)?.map((s) => s.trim()) ?? [];
  const mentions = [undefined, ...sentences.map((s) => s.replace(/\.$/, ''))];
  for (const mention of mentions) {
    for (const tone of TONES) {
      for (let variant = 0; variant < VARIANT_COUNT; variant++) {
        for (const length of LENGTHS) {
          const plan: Plan = mention === undefined ? { tone, variant, length } : { tone, variant, length, mention };
          if (same(writeCopy(brief, plan), copy)) return plan;
        }
      }
    }
  }
  return undefined;
}
