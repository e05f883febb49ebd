// The facts the assistant answers from, read live at the time of a message. No customer names or emails enter
// here: these facts go to a third-party model provider.
import type { SegmentRepository } from '../db/segments.ts';
import { summarizeCustomers, type CustomerFigures, type CustomerSummary, type Kpis, type TrendPoint } from '../domain/customer-summary.ts';
import type { CustomerStatus, Health } from '../domain/customers.ts';
import { describeAudience, type Condition } from '../domain/segments.ts';

/** A top customer without anything that identifies the person. */
export interface TopCustomerFact {
  rank: number;
  country: string;
  status: CustomerStatus;
  totalAmountSpent: number;
  totalTransactions: number;
}

export interface SegmentFact {
  /** For the local generator's proposals; the prompt never shows ids (the model asks list_segments). */
  id: string;
  name: string;
  /** The conditions in words: "customers in Germany with at least 5 purchases". */
  audience: string;
  /** The stored audience size. */
  size: number;
  /** For the local replies' choice of campaign; the prompt shows `audience`. */
  conditions: readonly Condition[];
}

export interface Grounding {
  at: Date;
  kpis: Kpis;
  health: Health;
  /** The last months, oldest first. */
  trend: TrendPoint[];
  top: { totalValue: number; items: TopCustomerFact[] };
  /** Largest first; equal sizes by name. */
  segments: SegmentFact[];
}

/** How many months of trend and how many top customers the assistant sees. */
export const TREND_MONTHS = 6;
export const TOP_CUSTOMERS = 5;

/**
 * Returns a reader of the live facts at a given time. The customer figures (a few milliseconds at a million
 * customers) are computed once per second of the clock and customers generation (`generation()` moves with every
 * customer write), so a burst of messages shares them and any write is seen by the next message; segments are
 * read every time.
 */
export function groundingReader(customers: CustomerFigures, segments: Pick<SegmentRepository, 'listSegments'>, generation: () => number) {
  let cached: { key: string; summary: CustomerSummary } | undefined;
  return async (now: Date): Promise<Grounding> => {
    const key = `${generation()}:${Math.floor(now.getTime() / 1000)}`;
    let summary = cached?.key === key ? cached.summary : undefined;
    if (!summary) {
      // Read under the key taken before it: a write meanwhile moves the generation, so the next message reads again.
      summary = await summarizeCustomers(customers, now, { trendMonths: TREND_MONTHS, topLimit: TOP_CUSTOMERS });
      cached = { key, summary };
    }
    return readGrounding(summary, segments, now);
  };
}

/** Resolves to the facts about the base (from its summary at `now`) and its saved segments, read now. */
export async function readGrounding(summary: CustomerSummary, segments: Pick<SegmentRepository, 'listSegments'>, now: Date): Promise<Grounding> {
  const saved = await segments.listSegments();
  return {
    at: now,
    kpis: summary.kpis,
    health: summary.health,
    trend: summary.trend,
    top: {
      totalValue: summary.top.totalValue,
      items: summary.top.items.map((c, i) => ({
        rank: i + 1,
        country: c.country,
        status: c.status,
        totalAmountSpent: c.totalAmountSpent,
        totalTransactions: c.totalTransactions,
      })),
    },
    segments: saved
      .map((s) => ({ id: s.id, name: s.name, audience: describeAudience(s.conditions), size: s.matchCount, conditions: s.conditions }))
      .sort((a, b) => b.size - a.size || a.name.localeCompare(b.name, 'en')),
  };
}
