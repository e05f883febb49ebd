// The facts the assistant answers from, read live at the time of a message. No customer names or emails enter
// here: these facts go to a third-party model provider.
import type { SegmentRepository } from '../db/segments.ts';
import { summarizeCustomers, type CustomerFigures, type Kpis, type TrendPoint } from '../domain/customer-summary.ts';
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

/** Returns the live facts about the base and its saved segments at `now`. */
export function readGrounding(customers: CustomerFigures, segments: Pick<SegmentRepository, 'listSegments'>, now: Date): Grounding {
  const summary = summarizeCustomers(customers, now, { trendMonths: TREND_MONTHS, topLimit: TOP_CUSTOMERS });
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
    segments: segments
      .listSegments()
      .map((s) => ({ name: s.name, audience: describeAudience(s.conditions), size: s.matchCount, conditions: s.conditions }))
      .sort((a, b) => b.size - a.size || a.name.localeCompare(b.name, 'en')),
  };
}
