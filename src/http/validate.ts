// Valibot validation of request parts into `validation_failed` problems.
import * as v from 'valibot';
import { AppError, type FieldError } from '../domain/errors.ts';

/** Returns the schema's output for `input`; throws `validation_failed` naming each invalid field once. */
export function parseInput<T>(schema: v.GenericSchema<unknown, T>, input: unknown, rootName: string): T {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return result.output;
  throw validationError(result.issues, rootName);
}

/** Returns a `validation_failed` error with one `{ field, message }` per dotted path. */
export function validationError(issues: readonly v.BaseIssue<unknown>[], rootName: string): AppError {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const issue of issues) {
    const field = v.getDotPath(issue) || rootName;
    if (seen.has(field)) continue;
    seen.add(field);
    errors.push({ field, message: issue.message });
  }
  const detail = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new AppError('validation_failed', detail, { errors });
}

/**
 * Returns query parameters as an object, with values that look numeric turned into numbers
 * where the schema expects a number, so `?limit=20` validates as 20 and `?limit=abc` is a type error.
 */
export function queryObject(schema: v.GenericSchema | undefined, query: URLSearchParams): Record<string, unknown> {
  const entries = schema && 'entries' in schema ? (schema.entries as Record<string, v.GenericSchema>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of query) {
    if (key in out) continue; // the first of repeated parameters wins
    out[key] = expectsNumber(entries[key]) && /^[+-]?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
  }
  return out;
}

function expectsNumber(schema: v.GenericSchema | undefined): boolean {
  let current: v.GenericSchema | undefined = schema;
  while (current && 'wrapped' in current) current = current.wrapped as v.GenericSchema;
  return current?.type === 'number';
}
