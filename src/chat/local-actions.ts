// The local generator with tools: "make a segment of ..." proposes save_segment (the conditions read by the words
// parser), "draft a campaign for <segment> to ..." proposes draft_campaign, "how many ..." counts with
// count_audience; once the results come back it says what they were. Anything else is a plain local reply.
import { CHANNELS, TONES, type Channel, type Tone } from '../domain/campaigns.ts';
import type { LocalTurn, ModelTurn, ToolCall } from '../llm/model.ts';
import { nameFrom } from '../segments/draft.ts';
import { conditionsFromWords } from '../segments/words/index.ts';
import type { Grounding, SegmentFact } from './grounding.ts';
import { localReply, namedSegment } from './local-reply.ts';
import { countAudience, draftCampaign, saveSegment, toolNamed } from './tools.ts';

const MAKE_SEGMENT =
  /\b(?:make|create|save|build|set up|add)\s+(?:me\s+|us\s+)?(?:a\s+|an\s+|the\s+)?(?:new\s+)?segment\b\s*(?:(?:called|named)\s+["“']([^"”']+)["”']\s*)?(?:of|for|with|from|:)?\s*([\s\S]*)$/i;
const DRAFT_CAMPAIGN =
  /\bdraft\s+(?:me\s+|us\s+)?(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:(email|e-mail|sms|text|push)\s+)?campaign\s+(?:for|to)\s+([\s\S]+?)\s+(?:to|that|so that|in order to)\s+([\s\S]+)$/i;
const HOW_MANY = /^\s*how\s+many\b([\s\S]*)$/i;

const OBJECTIVE_MAX = 600;

/** Whether the local generator's turns for `question` may read the country names (to parse its conditions). */
export function readsCountries(question: string): boolean {
  return !DRAFT_CAMPAIGN.test(question) && (MAKE_SEGMENT.test(question) || HOW_MANY.test(question));
}

/** Returns the local generator's turn for `question`, given the conversation so far in this turn. */
export function localTurn(g: Grounding, question: string, messages: readonly ModelTurn[], countries: () => readonly string[]): string | LocalTurn {
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') return afterTools(question, messages, countries);
  return firstStep(g, question, countries) ?? localReply(g, question);
}

function firstStep(g: Grounding, question: string, countries: () => readonly string[]): LocalTurn | string | undefined {
  const draft = DRAFT_CAMPAIGN.exec(question);
  if (draft) return draftCall(g, question, draft);
  const make = MAKE_SEGMENT.exec(question);
  if (make) {
    const description = clean(make[2] ?? '');
    const { conditions, unmatched } = conditionsFromWords(description, countries());
    if (!conditions.length) {
      return `I could not read any condition from “${description || question.trim()}”${unmatched.length ? ` (not understood: ${quoteAll(unmatched)})` : ''}. Name a country, an amount spent, a number of purchases or days since the last activity, for example: make a segment of customers in Germany with at least 3 purchases.`;
    }
    const name = make[1]?.trim() || nameFrom(description);
    return { toolCalls: [{ name: saveSegment.name, input: { name, conditions } }] };
  }
  const howMany = HOW_MANY.exec(question);
  if (howMany && g.kpis.totalCustomers > 0) {
    const { conditions } = conditionsFromWords(howMany[1] ?? '', countries());
    if (conditions.length) return { toolCalls: [{ name: countAudience.name, input: { conditions } }] };
  }
  return undefined;
}

function draftCall(g: Grounding, question: string, [, channelWord, target = '', goal = '']: RegExpExecArray): LocalTurn | string {
  const segment = segmentNamed(g.segments, clean(target)) ?? namedSegment(g.segments, question.toLowerCase());
  if (!segment) {
    const names = g.segments.slice(0, 5).map((s) => `“${s.name}”`);
    return names.length
      ? `Which segment should get it? I could not find “${clean(target)}” among your saved segments: ${names.join(', ')}${g.segments.length > 5 ? ', …' : ''}. Say, for example: draft a campaign for ${names[0]} to win them back.`
      : 'There are no saved segments yet. Make one first, for example: make a segment of customers inactive for more than 90 days.';
  }
  const lower = question.toLowerCase();
  const channel: Channel = channelOf(channelWord?.toLowerCase()) ?? CHANNELS.find((c) => new RegExp(`\\b${c}\\b`).test(lower)) ?? (/\btext\b/.test(lower) ? 'sms' : 'email');
  const tone: Tone = TONES.find((t) => new RegExp(`\\b${t}\\b`).test(lower)) ?? 'friendly';
  return { toolCalls: [{ name: draftCampaign.name, input: { segmentId: segment.id, objective: objectiveFrom(goal), channel, tone } }] };
}

/** What the tools answered, in words: a count, a proposal to confirm, or what went wrong. */
function afterTools(question: string, messages: readonly ModelTurn[], countries: () => readonly string[]): string {
  const results = messages[messages.length - 1];
  const asked = messages[messages.length - 2];
  if (results?.role !== 'tool') return '';
  const calls = new Map<string, ToolCall>((asked?.role === 'assistant' ? (asked.toolCalls ?? []) : []).map((c) => [c.id, c]));
  const lines = results.results.map((r) => {
    const value = parse(r.content);
    if (r.isError || typeof value.error === 'string') return `I could not do that: ${String(value.error ?? r.content)}`;
    const tool = toolNamed(calls.get(r.callId)?.name ?? '');
    if (tool?.access === 'write' && value.proposed === true) {
      return `Here is my proposal: ${String(value.summary)}. Confirm it to ${tool.confirmTo}, or dismiss it.`;
    }
    return (tool?.access === 'read' && tool.saysLocally?.(value)) || JSON.stringify(value);
  });
  // What the words parser could not use is said too, so nothing is silently dropped.
  const description = MAKE_SEGMENT.exec(question)?.[2] ?? HOW_MANY.exec(question)?.[1];
  const unmatched = description === undefined || DRAFT_CAMPAIGN.test(question) ? [] : conditionsFromWords(clean(description), countries()).unmatched;
  if (unmatched.length) lines.push(`Not used: ${quoteAll(unmatched)}.`);
  return lines.join('\n');
}

function segmentNamed(segments: readonly SegmentFact[], words: string): SegmentFact | undefined {
  const wanted = words.replace(/^(?:the|my|our)\s+/i, '').replace(/\s+segment$/i, '').toLowerCase();
  return segments.find((s) => s.name.toLowerCase() === wanted);
}

function channelOf(word: string | undefined): Channel | undefined {
  if (!word) return undefined;
  if (word === 'e-mail') return 'email';
  if (word === 'text') return 'sms';
  return CHANNELS.find((c) => c === word);
}

/** "win them back with 10% off." -> "Win them back with 10% off", at least 10 and at most 600 characters. */
function objectiveFrom(goal: string): string {
  const words = clean(goal).replace(/[.!?]+$/, '');
  const sentence = words.charAt(0).toUpperCase() + words.slice(1);
  const long = sentence.length >= 10 ? sentence : `Campaign to ${words}`.trim();
  return Array.from(long).slice(0, OBJECTIVE_MAX).join('');
}

/** Trims white space and surrounding quotes. */
const clean = (text: string) => text.replace(/\s+/g, ' ').trim().replace(/^["“'‘]+|["”'’?.!]+$/g, '').trim();

const quoteAll = (phrases: readonly string[]) => phrases.map((p) => `“${p}”`).join(', ');

function parse(content: string): Record<string, unknown> {
  try {
    const value = JSON.parse(content) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
