// Validation of request parts into `validation_failed` problems.
import type * as v from 'valibot';
import { AppError, invalidField } from '../domain/errors.ts';
import { checkShape, describeErrors } from '../domain/shape.ts';

/** Returns the schema's output for `input`; throws `validation_failed` naming each invalid field once. */
export function parseInput<T>(schema: v.GenericSchema<unknown, T>, input: unknown, rootName: string): T {
  const shape = checkShape(schema, input, rootName);
  if (shape.ok) return shape.value;
  throw new AppError('validation_failed', describeErrors(shape.errors), { errors: shape.errors });
}

const OBJECT_SCHEMAS = new Set(['object', 'loose_object', 'strict_object', 'object_with_rest']);

/** Whether the schema (under any wrappers) describes a JSON object. */
function expectsObject(schema: v.GenericSchema): boolean {
  return OBJECT_SCHEMAS.has(unwrap(schema)?.type ?? '');
}

/**
 * Returns the parsed body checked against the operation's schema. A body that must be an object is rejected when
 * it is anything else (an array, a string, a number, `null`, `true`), since valibot's `object` accepts arrays.
 */
export function parseBody<T>(schema: v.GenericSchema<unknown, T>, body: unknown): T {
  if (expectsObject(schema) && (typeof body !== 'object' || body === null || Array.isArray(body))) {
    throw invalidField('body', body === undefined ? 'A JSON object body is required.' : 'Must be a JSON object.');
  }
  return parseInput(schema, body, 'body');
}

/**
 * Returns query parameters as an object, with values that look numeric turned into numbers
 * where the schema expects a number, so `?limit=20` validates as 20 and `?limit=abc` is a type error.
 * Every parameter is single-valued: a repeated one is `validation_failed` naming it.
 */
export function queryObject(schema: v.GenericSchema | undefined, query: URLSearchParams): Record<string, unknown> {
  const entries = schema && 'entries' in schema ? (schema.entries as Record<string, v.GenericSchema>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of query) {
    if (key in out) throw invalidField(key, 'Must be given once.');
    out[key] = expectsNumber(entries[key]) && /^[+-]?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
  }
  return out;
}

function unwrap(schema: v.GenericSchema | undefined): v.GenericSchema | undefined {
  let current = schema;
  while (current && 'wrapped' in current) current = current.wrapped as v.GenericSchema;
  return current;
}

function expectsNumber(schema: v.GenericSchema | undefined): boolean {
  return unwrap(schema)?.type === 'number';
}
