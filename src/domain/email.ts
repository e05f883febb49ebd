// The one email rule for users and customers (product.md section 3).

/** Exactly the pattern of the specification; not valibot's `email()`, which is a different rule. */
export const EMAIL_PATTERN =
  /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;

/**
 * The same rule with the white space around the address allowed: what the service accepts, since it trims first.
 * Used in request schemas so the machine description does not reject what the service takes.
 */
export const EMAIL_INPUT_PATTERN = new RegExp(`^\\s*${EMAIL_PATTERN.source.slice(1, -1)}\\s*$`);
