// Schemas shared by several resources.
import * as v from 'valibot';
import { EMAIL_INPUT_PATTERN } from '../domain/email.ts';
import { ERROR_CODES } from '../domain/errors.ts';

/** Largest integer a JSON client can hold exactly. */
export const MAX_COUNTER = Number.MAX_SAFE_INTEGER;

/**
 * An email address: trimmed and lower-cased first, then checked against the specification's pattern (written with
 * the surrounding white space allowed, which changes nothing after the trim but documents what is accepted).
 */
export const Email = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.maxLength(254, 'Must be at most 254 characters.'),
  v.regex(EMAIL_INPUT_PATTERN, 'Must be a valid email address.'),
);

/**
 * Returns the documented `pattern` of text the service trims and then requires non-blank: white space around it (trimmed
 * away), then a visible character and, if more, any characters but `forbidden` (the body of a character class of
 * control characters) up to a last visible one. It only describes: the checks of the schema decide.
 */
export function nonBlankPattern(forbidden = '') {
  const visible = `[^\\s${forbidden}]`;
  const inner = forbidden ? `[^${forbidden}]` : '[\\s\\S]';
  return v.metadata<string, { pattern: string }>({ pattern: `^\\s*${visible}(?:${inner}*${visible})?\\s*$` });
}

/** A string trimmed of surrounding white space, limited to `min`..`max` characters, without control characters. */
export function TrimmedText(min: number, max: number) {
  return v.pipe(
    v.string(),
    v.trim(),
    v.minLength(min, `Must be at least ${min} character${min === 1 ? '' : 's'} long.`),
    v.maxLength(max, `Must be at most ${max} characters long.`),
    v.regex(/^[^\u0000-\u001f\u007f]*$/, 'Must not contain control characters.'),
    nonBlankPattern('\\u0000-\\u001f\\u007f'),
  );
}

export const Counter = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(MAX_COUNTER));

/** A `page` or `limit` query parameter: a whole number from 1 to `max`, `fallback` when absent. */
export const PositiveParam = (max: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.integer('Must be a whole number.'), v.minValue(1, 'Must be at least 1.'), v.maxValue(max, `Must be at most ${max}.`)), fallback);

/** Returns the schema of one page of a list: its items, the count over all pages, and the page and limit it answers. */
export function Page<TItem extends v.GenericSchema>(item: TItem) {
  return v.object({
    items: v.array(item),
    total: Counter,
    page: v.pipe(v.number(), v.integer(), v.minValue(1)),
    limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
  });
}

export const Timestamp = v.pipe(v.string(), v.minLength(1), v.metadata({ format: 'date-time' }), v.description('ISO 8601 UTC, as 2026-09-30T00:00:00.000Z'));

/** A path `{id}`: opaque, never validated beyond being present. */
export const IdParams = v.object({ id: v.pipe(v.string(), v.minLength(1)) });

/** The body of sign-out and deletes. */
export const NullBody = v.null();

export const Problem = v.object({
  type: v.string(),
  title: v.string(),
  status: v.pipe(v.number(), v.integer()),
  detail: v.string(),
  code: v.picklist(ERROR_CODES),
  errors: v.optional(v.array(v.object({ field: v.string(), message: v.string() }))),
  traceId: v.string(),
});
