// Import batches that can be recognised in the database: batch N's emails all end in "@b<N>.crash.test", so a
// count per email domain shows whether a batch is stored whole, not at all, or (a bug) in part. Each batch is
// reproducible from its number, with a known set of invalid and duplicate rows.
import { prng } from '../../scripts/synthetic-customers.ts';
import type { CustomerRow } from '../../src/customers/index.ts';
import { CUSTOMER_STATUSES, countryKey, parseIsoDate, toCents, type CustomerStatus } from '../../src/domain/customers.ts';

/** What a stored customer row must hold, as the database keeps it. */
export type ExpectedRow = Omit<CustomerRow, 'id'>;

export interface Batch {
  number: number;
  domain: string;
  rows: unknown[];
  /** The rows that must be stored when the batch is, by email. */
  valid: Map<string, ExpectedRow>;
}

// Mixed case, padding and non-ASCII letters, so the stored country key is exercised too.
const COUNTRIES = ['Germany', ' france ', 'United Kingdom', 'ÖSTERREICH', 'Éire', 'portugal', 'Česko', 'Sverige'];
const DAY_MS = 86_400_000;
const NOW = Date.now();

function dateText(random: () => number): string {
  const roll = random();
  // Mostly the last two years; some before 1970 (negative epoch days) and some date-times with an offset.
  const at = roll < 0.05 ? Date.UTC(1960, 0, 1) + Math.floor(random() * 3650) * DAY_MS : NOW - Math.floor(random() * 730) * DAY_MS;
  const day = new Date(at).toISOString().slice(0, 10);
  if (roll > 0.8) return `${day}T${String(Math.floor(random() * 24)).padStart(2, '0')}:30:00+02:00`;
  return day;
}

/** Returns batch `number` of `size` rows; about 3% are invalid and one row repeats an earlier email in other case. */
export function importBatch(number: number, size = 1000): Batch {
  const random = prng(number * 7919 + 17);
  const domain = `b${number}.crash.test`;
  const rows: unknown[] = [];
  const valid = new Map<string, ExpectedRow>();
  for (let i = 0; i < size; i++) {
    const country = COUNTRIES[Math.floor(random() * COUNTRIES.length)]!;
    const row: Record<string, unknown> = {
      name: `  Crash ${number}-${i} Ünal `,
      email: ` C${i}.x@${domain.toUpperCase()} `,
      country,
      totalTransactions: Math.floor(random() * 40),
      totalAmountSpent: Math.round(random() * 5_000_000) / 1000, // three decimals: stored rounded half-up to cents
      lastActivityDate: dateText(random),
      status: CUSTOMER_STATUSES[Math.floor(random() * 3)]!,
    };
    const fault = random();
    if (fault < 0.01) row.totalTransactions = -1;
    else if (fault < 0.02) row.status = 'gone';
    else if (fault < 0.03) row.lastActivityDate = '2026-02-30';
    else if (i === size - 1 && size > 1) row.email = ` c0.X@${domain} `; // a duplicate of row 1, differently written
    rows.push(row);
    const email = String(row.email).trim().toLowerCase();
    if (fault < 0.03 || valid.has(email)) continue;
    valid.set(email, {
      name: String(row.name).trim(),
      email,
      country: country.trim(),
      country_key: countryKey(country),
      total_transactions: row.totalTransactions as number,
      amount_cents: toCents(row.totalAmountSpent as number),
      last_activity_at: parseIsoDate(row.lastActivityDate as string)!,
      status: row.status as CustomerStatus,
    });
  }
  return { number, domain, rows, valid };
}
