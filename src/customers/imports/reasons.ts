// Why an imported row was not stored, in a marketer's words: the one table every import path reports from (the JSON
// import's `failures`, a CSV job's failures.csv, the preview's `problems`), so the same bad value reads the same way
// wherever it was sent.
import type { BaseIssue } from 'valibot';
import type { FieldError } from '../../domain/errors.ts';
import { FUTURE_DATE_MESSAGE } from '../../schemas/customers.ts';

/** Each customer field as a marketer names it, and the rule a bad value breaks. */
const FIELD_WORDS: Record<string, { label: string; rule: string; tooLarge?: string }> = {
  name: { label: 'Name', rule: 'Name must be 1 to 200 characters, without control characters.' },
  email: { label: 'Email', rule: 'Email must be a valid email address, such as ada@example.com.' },
  country: { label: 'Country', rule: 'Country must be 2 to 80 characters, without control characters.' },
  totalTransactions: {
    label: 'Number of transactions',
    rule: 'Number of transactions must be a whole number of 0 or more.',
    tooLarge: 'Number of transactions is too large.',
  },
  totalAmountSpent: { label: 'Amount spent', rule: 'Amount spent must be a number of 0 or more.', tooLarge: 'Amount spent is too large.' },
  lastActivityDate: { label: 'Last activity date', rule: 'Last activity date must be a real date, such as 2026-09-30 or 2026-09-30T14:00:00Z.' },
  status: { label: 'Status', rule: 'Status must be active, inactive or churned.' },
};

const NOT_A_ROW = 'The row must be an object holding the customer’s fields.';

/** Whether the issue says the field is absent (or null): "is missing" rather than the rule. */
function isMissing(issue: BaseIssue<unknown>): boolean {
  return (issue.kind === 'schema' && issue.type === 'object') || issue.input === undefined || issue.input === null;
}

/** Returns the sentence for one field's first issue. */
function fieldMessage(field: string, issue: BaseIssue<unknown>): string {
  const words = FIELD_WORDS[field];
  if (!words) return NOT_A_ROW;
  if (isMissing(issue)) return `${words.label} is missing.`;
  if (issue.message === FUTURE_DATE_MESSAGE) return 'Last activity date must not be more than one day in the future.';
  if (issue.type === 'max_value' && words.tooLarge) return words.tooLarge;
  return words.rule;
}

/** Returns one error per field (its first issue), in a marketer's words, and the row's reason made of them. */
export function rowProblems(issues: readonly (BaseIssue<unknown> & { field: string })[]): { reason: string; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const missing: string[] = [];
  for (const issue of issues) {
    if (errors.some((e) => e.field === issue.field)) continue;
    errors.push({ field: issue.field, message: fieldMessage(issue.field, issue) });
    if (FIELD_WORDS[issue.field] && isMissing(issue)) missing.push(FIELD_WORDS[issue.field]!.label);
  }
  // Missing fields are said once, together; every other field in its own sentence.
  const sentences = errors.filter((e) => !(FIELD_WORDS[e.field] && e.message.endsWith(' is missing.'))).map((e) => e.message);
  if (missing.length > 0) sentences.unshift(`${listed(missing)} ${missing.length === 1 ? 'is' : 'are'} missing.`);
  return { reason: sentences.join(' '), errors };
}

/** "Email", "Email and status", "Email, country and status": the first kept capitalised, the others lower-cased. */
function listed(labels: readonly string[]): string {
  const words = labels.map((label, i) => (i === 0 ? label : label.toLowerCase()));
  return words.length === 1 ? words[0]! : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** The reason an email already stored (or, when skipping, repeated earlier in the same import) is not imported. */
export function duplicateReason(email: string): string {
  return `A customer with the email ${email} already exists.`;
}

/** The reason a row repeating an earlier row's email is not imported while updating existing customers. */
export function repeatedReason(email: string): string {
  return `The email ${email} is on an earlier row of this file; only that row is imported.`;
}

/** The reason a record of a CSV file could not be read as one (csv-parse's error code), by what is wrong with it. */
export function unreadableReason(code: string | undefined): string {
  if (code === 'CSV_QUOTE_NOT_CLOSED') return 'This row opens a quote that is never closed, so it could not be read.';
  if (code === 'CSV_INVALID_CLOSING_QUOTE') return 'A quoted cell of this row has more text after its closing quote, so it could not be read.';
  if (code === 'CSV_MAX_RECORD_SIZE') return 'This row is too long to be read.';
  return 'This row could not be read as CSV (look at its quotes and commas).';
}

/** The reason a file stopped being read part-way (a system error's code, never a path of this machine). */
export function brokenFileReason(cause: string): string {
  return `The file could not be read from here on: ${cause}`;
}
