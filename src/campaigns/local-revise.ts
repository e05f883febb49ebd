// The local generator's revisions and variants: plain instructions (shorter, longer, a tone, more or less urgent,
// mention a word, no emoji). Its own copy is written again from a changed plan, so a revision keeps every property of
// a first draft; copy someone else wrote or edited is changed by whole sentences only, never cut.
import { CHANNEL_LIMITS, CTA_IN_MESSAGE, type CampaignCopy, type Channel, type Tone } from '../domain/campaigns.ts';
import { invalidField } from '../domain/errors.ts';
import { cleanText, fitCopy } from './fit.ts';
import { firstPlan, LENGTHS, mentionSentence, planOf, themeOf, VARIANT_COUNT, writeCopy, type Plan } from './local-copy.ts';
import { copyText, restates } from './restatement.ts';
import { THEME_WORDS, TONE_WORDS, URGENCY } from './local-phrases.ts';
import type { Rewrite } from './revise.ts';

/** One edit the local generator knows how to make. */
type Edit = { kind: 'shorter' } | { kind: 'longer' } | { kind: 'tone'; tone: Tone } | { kind: 'no-emoji' } | { kind: 'mention'; words: string };

/** What the local generator understands, for the problem detail when it understands nothing. */
export const LOCAL_INSTRUCTIONS = 'shorter, longer, more professional, friendlier, more urgent, less urgent, more promotional, "mention <words>", "no emoji"';

const RULES: { pattern: RegExp; edit: (match: RegExpExecArray) => Edit }[] = [
  { pattern: /\b(shorter|shorten|concise|brief(?:er)?|trim(?:med)?|tighter|cut it down|fewer words)\b/i, edit: () => ({ kind: 'shorter' }) },
  { pattern: /\b(longer|lengthen|expand|more detail(?:ed)?|elaborate|fuller)\b/i, edit: () => ({ kind: 'longer' }) },
  { pattern: /\b(less urgent|less pushy|calmer|softer|no pressure|more relaxed)\b/i, edit: () => ({ kind: 'tone', tone: 'friendly' }) },
  { pattern: /\b(?<!less )(urgent|urgency|hurry|time[- ]limited|last chance)\b/i, edit: () => ({ kind: 'tone', tone: 'urgent' }) },
  { pattern: /\b(friendl(?:y|ier)|warm(?:er)?|casual|personal)\b/i, edit: () => ({ kind: 'tone', tone: 'friendly' }) },
  { pattern: /\b(professional|formal|serious|businesslike)\b/i, edit: () => ({ kind: 'tone', tone: 'professional' }) },
  { pattern: /\b(promotional|salesy|sell(?:s|ing)? (?:it )?harder|punchier|exciting|more excit\w*)\b/i, edit: () => ({ kind: 'tone', tone: 'promotional' }) },
  { pattern: /\b(?:no|without|remove|drop|lose|fewer|less)\s+(?:the\s+)?emojis?\b/i, edit: () => ({ kind: 'no-emoji' }) },
  {
    pattern: /\b(?:mention|include|say|talk about|refer to)\s+(?:the\s+words?\s+)?["“'‘]?([^"”'’.,;:!?\n]{2,60})/i,
    edit: (match) => ({ kind: 'mention', words: match[1]!.trim() }),
  },
];

/** Returns the edits an instruction asks for; throws `validation_failed` on `instruction` when it names none. */
function editsOf(instruction: string): Edit[] {
  const edits: Edit[] = [];
  for (const rule of RULES) {
    const found = rule.pattern.exec(instruction);
    if (!found) continue;
    const edit = rule.edit(found);
    // One tone wins: the first the rules find ("less urgent" before "urgent").
    if (edit.kind === 'tone' && edits.some((e) => e.kind === 'tone')) continue;
    edits.push(edit);
  }
  if (edits.length === 0) {
    throw invalidField('instruction', `The local generator understands only plain instructions: ${LOCAL_INSTRUCTIONS}. Configure a model provider for anything else.`);
  }
  return edits;
}

/** Returns the plan with the edits made (no emoji changes nothing: the local generator writes none). */
function replan(plan: Plan, edits: Edit[]): Plan {
  const step = (by: number) => LENGTHS[Math.min(LENGTHS.length - 1, Math.max(0, LENGTHS.indexOf(plan.length) + by))]!;
  return edits.reduce<Plan>((next, edit) => {
    if (edit.kind === 'shorter') return { ...next, length: step(-1) };
    if (edit.kind === 'longer') return { ...next, length: step(1) };
    if (edit.kind === 'tone') return { ...next, tone: edit.tone };
    if (edit.kind === 'mention') return { ...next, mention: edit.words };
    return next;
  }, plan);
}

const EMOJI = /\p{Extended_Pictographic}(?:\uFE0F|\u200D\p{Extended_Pictographic})*\uFE0F?/gu;
const ALL_CLOSINGS = new Set(Object.values(TONE_WORDS).flatMap((w) => w.closings.flatMap((c) => [c, c.replace(/\.$/, '!')])).concat(URGENCY.offer, URGENCY.plain));

/** Someone else's message as paragraphs of sentences, without the call to action sms and push end with. */
function paragraphsOf(copy: CampaignCopy, channel: Channel): string[][] {
  let body = copy.message;
  if (CTA_IN_MESSAGE.has(channel) && body.toLowerCase().endsWith(copy.callToAction.toLowerCase())) body = body.slice(0, body.length - copy.callToAction.length);
  const blocks = channel === 'email' ? body.split(/\n{2,}/) : [body];
  return blocks.map((block) => block.match(/[^.!?…]+(?:[.!?…]+|$)/gu)?.map((s) => s.trim()).filter(Boolean) ?? []).filter((b) => b.length > 0);
}

function messageOf(paragraphs: string[][], copy: CampaignCopy, channel: Channel): string {
  const body = paragraphs.map((p) => p.join(' ')).join(channel === 'email' ? '\n\n' : ' ');
  return CTA_IN_MESSAGE.has(channel) ? `${body} ${copy.callToAction}`.trim() : body;
}

/** Applies the edits to copy the local generator did not write, by whole sentences, within the channel's limits. */
function editText({ brief, copy: original }: Rewrite, edits: Edit[]): CampaignCopy {
  const channel = brief.channel;
  const room = CHANNEL_LIMITS[channel].message;
  let copy = original;
  let paragraphs = paragraphsOf(copy, channel);
  const length = () => messageOf(paragraphs, copy, channel).length;
  const last = () => paragraphs[paragraphs.length - 1]!;
  const restated = () => restates(copyText({ ...copy, message: messageOf(paragraphs, copy, channel) }), brief.objective);
  /** Appends a sentence to the last paragraph when it fits and does not, with its neighbours, restate the objective. */
  const add = (sentence: string) => {
    if (paragraphs.length === 0) paragraphs.push([]);
    const before = restated();
    last().push(sentence);
    if (length() > room || (!before && restated())) last().pop();
  };
  /** Drops the last sentence that is neither the first nor `keep`; false when there is none. */
  const dropOne = (keep?: string) => {
    for (let p = paragraphs.length - 1; p >= 0; p--) {
      const sentences = paragraphs[p]!;
      let at = sentences.length - 1;
      while (at >= (p > 0 ? 0 : 1) && sentences[at] === keep) at--;
      if (at < (p > 0 ? 0 : 1)) continue;
      paragraphs[p]!.splice(at, 1);
      paragraphs = paragraphs.filter((b) => b.length > 0);
      return true;
    }
    return false;
  };
  for (const edit of edits) {
    if (edit.kind === 'no-emoji') {
      const strip = (text: string, keepLines = false) => cleanText(text.replace(EMOJI, ''), keepLines);
      copy = { title: strip(copy.title) || copy.title, message: strip(copy.message, channel === 'email') || copy.message, callToAction: strip(copy.callToAction) || copy.callToAction };
      paragraphs = paragraphsOf(copy, channel);
    } else if (edit.kind === 'shorter') {
      const target = Math.max(20, Math.floor(length() * 0.6));
      while (length() > target && dropOne()) {}
    } else if (edit.kind === 'longer') {
      add(TONE_WORDS[brief.tone].closings[0]!);
      add(THEME_WORDS[themeOf(brief)].extra);
    } else if (edit.kind === 'tone') {
      paragraphs = paragraphs.map((p) => p.filter((s) => !ALL_CLOSINGS.has(s))).filter((b) => b.length > 0);
      add(TONE_WORDS[edit.tone].closings[0]!);
      if (edit.tone === 'urgent') add(URGENCY.plain);
    } else {
      const sentence = mentionSentence(edit.words);
      if (copy.message.toLowerCase().includes(edit.words.toLowerCase())) continue;
      if (channel === 'email') paragraphs.splice(Math.min(1, paragraphs.length), 0, [sentence]);
      else if (paragraphs[0]) paragraphs[0].splice(1, 0, sentence);
      else paragraphs.push([sentence]);
      while (length() > room && dropOne(sentence)) {}
    }
  }
  return fitCopy({ ...copy, message: messageOf(paragraphs, copy, channel) }, channel);
}

/**
 * Returns the copy rewritten by the local generator as the instruction says, within the channel's limits; throws
 * `validation_failed` on `instruction` when it names nothing the local generator knows.
 */
export function localRevision(rewrite: Rewrite, instruction: string): CampaignCopy {
  const edits = editsOf(instruction);
  const plan = planOf(rewrite.brief, rewrite.copy);
  // A second mention would replace the first in the plan: add it as a sentence instead.
  const secondMention = plan?.mention !== undefined && edits.some((e) => e.kind === 'mention' && e.words !== plan.mention);
  if (!plan || secondMention) return editText(rewrite, edits);
  return writeCopy(rewrite.brief, replan(plan, edits));
}

/**
 * Returns `count` alternatives to the copy written by the local generator: the instruction applied (when given),
 * each with another opening, title and call to action than the copy and than each other.
 */
export function localVariants(rewrite: Rewrite, count: number, instruction: string | undefined): CampaignCopy[] {
  const edits = instruction ? editsOf(instruction) : [];
  const base = replan(planOf(rewrite.brief, rewrite.copy) ?? firstPlan(rewrite.brief), edits);
  return Array.from({ length: count }, (_, i) => writeCopy(rewrite.brief, { ...base, variant: (base.variant + i + 1) % VARIANT_COUNT }));
}
