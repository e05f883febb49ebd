// Numbers and facts in words, shared by the prompt and the local replies so both read the same.
import type { Grounding, SegmentFact } from './grounding.ts';

const WHOLE = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const MONEY = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const SHARE = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** "12,480" */
export const whole = (n: number): string => WHOLE.format(n);

/** "12,480.50": amounts carry no currency, the service stores none. */
export const money = (n: number): string => MONEY.format(n);

/** "12.5%" of a 0-100 share. */
export const percent = (share: number): string => `${SHARE.format(share)}%`;

/** "1 customer", "12,480 customers" */
export const customers = (n: number): string => `${whole(n)} customer${n === 1 ? '' : 's'}`;

/** Returns `part` as a share of `total`, 0-100, or 0 when the total is 0. */
export const shareOf = (part: number, total: number): number => (total === 0 ? 0 : (part / total) * 100);

/** "“VIP Germany” (customers in Germany, 120 customers)" */
export function segmentInWords(segment: SegmentFact): string {
  return `“${segment.name}” (${segment.audience}, ${customers(segment.size)})`;
}

/** "2026-11-20 12:00 UTC" */
export function instant(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** Returns the headline lines: counts by status, value, and health with its parts. */
export function baseInWords(g: Grounding): string[] {
  const { kpis, health } = g;
  return [
    `Customers: ${whole(kpis.totalCustomers)} in total — ${whole(kpis.statusCounts.active)} active, ${whole(kpis.statusCounts.inactive)} inactive, ${whole(kpis.statusCounts.churned)} churned.`,
    `Lifetime value: ${money(kpis.totalTransactionValue)} in total, ${money(kpis.averageCustomerValue)} per customer on average.`,
    `Health score: ${health.score}/100 (${health.level}). Active share ${percent(health.activeShare)}, churned share ${percent(health.churnedShare)}, ` +
      `${whole(health.inactiveCount)} inactive, ${whole(health.staleActives)} marked active but idle for more than 60 days.`,
  ];
}
