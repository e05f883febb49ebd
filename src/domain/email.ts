// The one email rule for users and customers (product.md section 3).

/** Exactly the pattern of the specification; not valibot's `email()`, which is a different rule. */
export const EMAIL_PATTERN =
  /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;

/** Returns the address trimmed and lower-cased, the form it is validated, stored and compared in. */
export function normalizeEmail(value: string): string {
  return value.trim().toLowerCase();
}
