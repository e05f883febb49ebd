// The one email rule for users and customers (product.md section 3).

/** Exactly the pattern of the specification; not valibot's `email()`, which is a different rule. */
export const EMAIL_PATTERN =
  /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/;
