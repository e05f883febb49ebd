// Checking any value against a valibot schema, with failures as field errors: requests, import rows, model output.
import * as v from 'valibot';
import type { FieldError } from './errors.ts';

export type Shape<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/**
 * Returns the schema's output, or one `{ field, message }` per invalid dotted path (first issue of each);
 * an issue at the root is named `rootName`. Never throws: the caller decides which error a failure is.
 */
export function checkShape<T>(schema: v.GenericSchema<unknown, T>, value: unknown, rootName: string): Shape<T> {
  const result = v.safeParse(schema, value, { abortPipeEarly: true });
  if (result.success) return { ok: true, value: result.output };
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const issue of result.issues) {
    const field = v.getDotPath(issue) || rootName;
    if (seen.has(field)) continue;
    seen.add(field);
    errors.push({ field, message: issue.message });
  }
  return { ok: false, errors };
}

/** Returns the errors as one line: `field: message; field: message`. */
export function describeErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.message}`).join('; ');
}
