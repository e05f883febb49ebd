// The live picture of the customer base: KPIs, monthly trend, health and top customers, computed from the aggregate
// reads. The aggregates endpoints answer these values as they are; the assistant's prompt and local replies read them.
import { dayOf, healthOf, trailingMonths, type Customer, type CustomerStatus, type Health, type StatusCounts } from './customers.ts';

/** The aggregate reads a summary needs; the customer repository has exactly these. */
export interface CustomerFigures {
  stats: {
    totalsByStatus(): Promise<Record<CustomerStatus, { customers: number; cents: number }>>;
    daysBetween(fromDay: number, toDay: number): Promise<readonly { status: CustomerStatus; day: number; customers: number; amount_cents: number }[]>;
    healthInputs(now: Date): Promise<{ counts: StatusCounts; staleActives: number }>;
  };
  topCustomers(limit: number): Promise<Customer[]>;
}

export interface Kpis {
  totalCustomers: number;
  activeCustomers: number;
  totalTransactionValue: number;
  averageCustomerValue: number;
  statusCounts: StatusCounts;
}

export interface TrendPoint {
  /** `YYYY-MM` */
  month: string;
  value: number;
  customers: number;
  churned: number;
}

export type TopCustomer = Pick<Customer, 'id' | 'name' | 'country' | 'status' | 'totalAmountSpent' | 'totalTransactions'>;

export interface TopCustomers {
  totalValue: number;
  items: TopCustomer[];
}

/** Everything the assistant is told about the base, computed at one instant. */
export interface CustomerSummary {
  kpis: Kpis;
  health: Health;
  trend: TrendPoint[];
  top: TopCustomers;
}

const cents = (amount: number) => amount / 100;

type Totals = Awaited<ReturnType<CustomerFigures['stats']['totalsByStatus']>>;

function kpisOf(totals: Totals): Kpis {
  const count = totals.active.customers + totals.inactive.customers + totals.churned.customers;
  const value = totals.active.cents + totals.inactive.cents + totals.churned.cents;
  return {
    totalCustomers: count,
    activeCustomers: totals.active.customers,
    totalTransactionValue: cents(value),
    averageCustomerValue: count === 0 ? 0 : cents(Math.round(value / count)),
    statusCounts: { active: totals.active.customers, inactive: totals.inactive.customers, churned: totals.churned.customers },
  };
}

function topOf(totals: Totals, customers: readonly Customer[]): TopCustomers {
  return {
    totalValue: cents(totals.active.cents + totals.inactive.cents + totals.churned.cents),
    items: customers.map(({ id, name, country, status, totalAmountSpent, totalTransactions }) => ({
      id,
      name,
      country,
      status,
      totalAmountSpent,
      totalTransactions,
    })),
  };
}

/** Returns the headline numbers of the whole base. */
export async function customerKpis(figures: CustomerFigures): Promise<Kpis> {
  return kpisOf(await figures.stats.totalsByStatus());
}

/** Returns customers bucketed by the UTC month of their last activity, over `months` months ending with the month of `now`, oldest first. */
export async function activityTrend(figures: CustomerFigures, now: Date, months: number): Promise<TrendPoint[]> {
  const names = trailingMonths(now, months);
  const starts = names.map((m) => dayOf(Date.parse(`${m}-01T00:00:00Z`)));
  const [first] = names;
  const end = new Date(`${first}-01T00:00:00Z`);
  end.setUTCMonth(end.getUTCMonth() + months);
  const points = names.map((month) => ({ month, value: 0, customers: 0, churned: 0 }));
  let m = 0;
  for (const bucket of await figures.stats.daysBetween(starts[0]!, dayOf(end.getTime()))) {
    while (m + 1 < starts.length && bucket.day >= starts[m + 1]!) m++;
    const point = points[m]!;
    point.value += bucket.amount_cents;
    point.customers += bucket.customers;
    if (bucket.status === 'churned') point.churned += bucket.customers;
  }
  return points.map((p) => ({ ...p, value: cents(p.value) }));
}

/** Returns the 0-100 health of the base at `now`, with its level and the shares behind it. */
export async function customerHealth(figures: CustomerFigures, now: Date): Promise<Health> {
  const { counts, staleActives } = await figures.stats.healthInputs(now);
  return healthOf(counts, staleActives);
}

/** Returns the `limit` highest-value customers and the value of the whole base. */
export async function topCustomers(figures: CustomerFigures, limit: number): Promise<TopCustomers> {
  return topOf(await figures.stats.totalsByStatus(), await figures.topCustomers(limit));
}

/** Returns KPIs, health, the last `trendMonths` months of the trend and the `topLimit` top customers, all at `now`. */
export async function summarizeCustomers(figures: CustomerFigures, now: Date, { trendMonths = 6, topLimit = 5 } = {}): Promise<CustomerSummary> {
  const totals = await figures.stats.totalsByStatus();
  return {
    kpis: kpisOf(totals),
    health: await customerHealth(figures, now),
    trend: await activityTrend(figures, now, trendMonths),
    top: topOf(totals, await figures.topCustomers(topLimit)),
  };
}
