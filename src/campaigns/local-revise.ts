// The local generator's revisions: plain instructions (shorter, longer, a tone, more or less urgent, mention a
// word, no emoji) applied to the copy by rule, deterministically and within the channel's limits.
import { CHANNEL_LIMITS, CTA_IN_MESSAGE, TONES, type CampaignCopy, type Tone } from '../domain/campaigns.ts';
import { invalidField } from '../domain/errors.ts';
import { cleanText, cutAtWord, fitCopy } from './fit.ts';
import { upperFirst, VOICES } from './local-copy.ts';
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

/** Returns the edits an instruction asks for, in the order of the rules; empty when it names none. */
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
  return edits;
}

const EMOJI = /\p{Extended_Pictographic}(?:\uFE0F|\u200D\p{Extended_Pictographic})*\uFE0F?/gu;
const STOCK_TITLES = TONES.map((tone) => VOICES[tone].title('')).filter(Boolean);
const STOCK_SENTENCES = TONES.flatMap((tone) => [VOICES[tone].opener, VOICES[tone].closer]);
const STOCK_CTAS = new Set(TONES.flatMap((tone) => [VOICES[tone].callToAction, VOICES[tone].emailButton]));
const SIGN_OFF_LINE = new RegExp(`\\n*(?:${TONES.map((tone) => escape(VOICES[tone].signOff)).join('|')})\\n[^\\n]*$`);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The message's sentences without the call to action the channel appends; email keeps its paragraphs apart. */
interface Parts {
  sentences: string[];
  signOff: string | undefined;
}

function split(copy: CampaignCopy, channel: keyof typeof CHANNEL_LIMITS): Parts {
  let body = copy.message;
  let signOff: string | undefined;
  const signed = SIGN_OFF_LINE.exec(body);
  if (signed) {
    signOff = signed[0].trim();
    body = body.slice(0, signed.index);
  }
  if (CTA_IN_MESSAGE.has(channel) && body.toLowerCase().endsWith(copy.callToAction.toLowerCase())) body = body.slice(0, body.length - copy.callToAction.length);
  const sentences = body.match(/[^.!?…\n]+(?:[.!?…]+|\n+|$)/gu)?.map((s) => s.trim()).filter(Boolean) ?? [];
  return { sentences, signOff };
}

function join(parts: Parts, copy: CampaignCopy, channel: keyof typeof CHANNEL_LIMITS): string {
  const body = parts.sentences.join(channel === 'email' ? '\n\n' : ' ');
  const withSignOff = parts.signOff ? `${body}\n\n${parts.signOff}` : body;
  return CTA_IN_MESSAGE.has(channel) ? `${withSignOff} ${copy.callToAction}` : withSignOff;
}

function withoutStockTitle(title: string): string {
  const stock = STOCK_TITLES.find((prefix) => title.startsWith(prefix));
  return stock ? upperFirst(title.slice(stock.length)) : title;
}

/** Applies one edit to the copy (before it is fitted to the channel's limits). */
function apply(edit: Edit, copy: CampaignCopy, { brief }: Rewrite): CampaignCopy {
  const channel = brief.channel;
  const parts = split(copy, channel);
  switch (edit.kind) {
    case 'no-emoji': {
      const strip = (text: string) => cleanText(text.replace(EMOJI, ''), channel === 'email');
      return { title: strip(copy.title) || 'News for you', message: strip(copy.message) || copy.message.replace(EMOJI, ''), callToAction: strip(copy.callToAction) || VOICES[brief.tone].callToAction };
    }
    case 'shorter': {
      const target = Math.max(20, Math.floor(copy.message.length * 0.6));
      // Stock phrases go first, then the last sentences; the first sentence always stays.
      const kept = [...parts.sentences];
      const stockAt = () => kept.findIndex((s, i) => i > 0 && STOCK_SENTENCES.includes(s));
      while (kept.length > 1 && join({ ...parts, sentences: kept }, copy, channel).length > target) {
        const at = stockAt();
        kept.splice(at > 0 ? at : kept.length - 1, 1);
      }
      const title = withoutStockTitle(copy.title);
      const message = join({ sentences: kept, signOff: undefined }, copy, channel);
      return { title: title.length < copy.title.length ? title : cutAtWord(copy.title, Math.max(10, Math.floor(copy.title.length * 0.7))), message, callToAction: copy.callToAction };
    }
    case 'longer': {
      const voice = VOICES[brief.tone];
      const extra = [voice.closer, `We picked this for ${brief.audience}.`, 'Thank you for being with us.'].filter((s) => !copy.message.includes(s));
      const room = CHANNEL_LIMITS[channel].message;
      const sentences = [...parts.sentences];
      for (const sentence of extra) {
        if (join({ ...parts, sentences: [...sentences, sentence] }, copy, channel).length > room) break;
        sentences.push(sentence);
      }
      return { ...copy, message: join({ ...parts, sentences }, copy, channel) };
    }
    case 'tone': {
      const voice = VOICES[edit.tone];
      const callToAction = STOCK_CTAS.has(copy.callToAction) ? (channel === 'email' ? voice.emailButton : voice.callToAction) : copy.callToAction;
      const sentences = [voice.opener, ...parts.sentences.filter((s) => !STOCK_SENTENCES.includes(s)), voice.closer];
      const signOff = parts.signOff ? `${voice.signOff}\n${parts.signOff.split('\n').slice(1).join('\n') || 'The team'}` : undefined;
      const next = { ...copy, callToAction };
      return { title: voice.title(withoutStockTitle(copy.title)), message: join({ sentences, signOff }, next, channel), callToAction };
    }
    case 'mention': {
      if (copy.message.toLowerCase().includes(edit.words.toLowerCase())) return copy;
      const sentences = [...parts.sentences];
      sentences.splice(Math.min(1, sentences.length), 0, `${upperFirst(edit.words)}.`);
      return { ...copy, message: join({ ...parts, sentences }, copy, channel) };
    }
  }
}

/**
 * Returns the copy rewritten by the local generator as the instruction says, within the channel's limits; throws
 * `validation_failed` on `instruction` when it names nothing the local generator knows.
 */
export function localRevision(rewrite: Rewrite, instruction: string): CampaignCopy {
  const edits = editsOf(instruction);
  if (edits.length === 0) {
    throw invalidField('instruction', `The local generator understands only plain instructions: ${LOCAL_INSTRUCTIONS}. Configure a model provider for anything else.`);
  }
  // Mentions go in last, so a shorter or restyled text still carries them.
  const ordered = [...edits.filter((e) => e.kind !== 'mention'), ...edits.filter((e) => e.kind === 'mention')];
  const edited = ordered.reduce((copy, edit) => fitCopy(apply(edit, copy, rewrite), rewrite.brief.channel), rewrite.copy);
  return fitCopy(edited, rewrite.brief.channel);
}

/**
 * Returns `count` alternatives to the copy written by the local generator: the instruction applied first (when
 * given), then each alternative in another tone than the campaign's, in a fixed order.
 */
export function localVariants(rewrite: Rewrite, count: number, instruction: string | undefined): CampaignCopy[] {
  const base = instruction ? localRevision(rewrite, instruction) : rewrite.copy;
  const tones = (['friendly', 'urgent', 'promotional', 'professional'] as const).filter((tone) => tone !== rewrite.brief.tone);
  return tones.slice(0, count).map((tone) => fitCopy(apply({ kind: 'tone', tone }, base, rewrite), rewrite.brief.channel));
}
