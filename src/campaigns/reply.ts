// Reading a model's campaign reply: untrusted text that should hold `{ title, message, callToAction }`.
import * as v from 'valibot';
import type { CampaignCopy } from '../domain/campaigns.ts';
import { checkShape, describeErrors } from '../domain/shape.ts';
import type { ReadResult } from '../llm/json-reply.ts';
import { cleanText } from './fit.ts';

const Part = v.pipe(v.string('Must be a string.'), v.transform((text) => cleanText(text, true)), v.minLength(1, 'Must not be empty.'));

/** What a usable reply is: three non-empty strings. Limits are applied afterwards, by cutting. */
export const CampaignReply = v.object({ title: Part, message: Part, callToAction: Part });

/** The JSON Schema asked of the provider (its JSON output mode), in the subset strict modes accept. */
export const CAMPAIGN_REPLY_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', description: 'Short headline.' },
    message: { type: 'string', description: 'The body text.' },
    callToAction: { type: 'string', description: 'A few words telling the reader what to do.' },
  },
  required: ['title', 'message', 'callToAction'],
  additionalProperties: false,
};

/** Near-miss key names, compared lower-cased without separators, mapped to the field they mean. */
const KEY_ALIASES: Record<string, keyof CampaignCopy> = {
  title: 'title',
  subject: 'title',
  headline: 'title',
  heading: 'title',
  message: 'message',
  body: 'message',
  text: 'message',
  content: 'message',
  copy: 'message',
  calltoaction: 'callToAction',
  cta: 'callToAction',
  action: 'callToAction',
  button: 'callToAction',
  buttontext: 'callToAction',
};

export type ReadReply = ReadResult<CampaignCopy>;

/** Returns the first JSON object in the text: the whole text, inside code fences, or amid prose. */
export function findObject(text: string): unknown {
  const candidates = [text.trim()];
  const fenced = /```[a-zA-Z]*\s*([\s\S]*?)```/.exec(text);
  if (fenced?.[1]) candidates.push(fenced[1].trim());
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate) as unknown;
    } catch {
      // try the next reading
    }
  }
  return undefined;
}

/** Returns the first JSON array in the text (from its first `[` to its last `]`), or undefined. */
export function findArray(text: string): unknown[] | undefined {
  const start = text.indexOf('[');
  const end = text.lastIndexOf(']');
  if (start < 0 || end <= start) return undefined;
  try {
    const found = JSON.parse(text.slice(start, end + 1)) as unknown;
    return Array.isArray(found) ? found : undefined;
  } catch {
    return undefined;
  }
}

/** Returns the object with near-miss keys renamed; a lone wrapper such as `{ "campaign": { ... } }` is opened. */
function normaliseKeys(value: Record<string, unknown>): Record<string, unknown> {
  const entries = Object.entries(value);
  const [only] = entries;
  if (entries.length === 1 && only && typeof only[1] === 'object' && only[1] !== null && !Array.isArray(only[1])) {
    return normaliseKeys(only[1] as Record<string, unknown>);
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of entries) {
    const field = KEY_ALIASES[key.toLowerCase().replace(/[^a-z]/g, '')];
    if (field && !(field in out)) out[field] = item;
  }
  return out;
}

/** Reads the reply, repairing what can be repaired (fences, prose, key case and names); else says what is wrong. */
export function readCampaignReply(text: string): ReadReply {
  const found = findObject(text);
  if (typeof found !== 'object' || found === null || Array.isArray(found)) {
    return { ok: false, problem: 'The reply did not contain a JSON object.' };
  }
  return readCopyObject(found as Record<string, unknown>, 'reply');
}

/** Reads one object as campaign copy, near-miss keys renamed; `at` names it in the problem. */
export function readCopyObject(found: Record<string, unknown>, at: string): ReadReply {
  const shape = checkShape(CampaignReply, normaliseKeys(found), at);
  if (!shape.ok) return { ok: false, problem: describeErrors(shape.errors) };
  return { ok: true, value: shape.value };
}
