// The aggregate tables (customer_totals, customer_days, customer_countries): deltas written in the same
// transaction as each customer write, and the reads behind KPIs, health, trend, top and list totals.
import {
  CUSTOMER_STATUSES,
  DAY_MS,
  STALE_AFTER_DAYS,
  dayOf,
  type CustomerRecord,
  type CustomerStatus,
  type StatusCounts,
} from '../../domain/customers.ts';
import type { Db } from '../../db/database.ts';

/** Each status' place in the keys of StatsDelta.days. */
const STATUS_PLACE = Object.fromEntries(CUSTOMER_STATUSES.map((status, i) => [status, i])) as Record<CustomerStatus, number>;

/** Sums of customers and cents to add to (or, negative, take from) the aggregate tables. */
export class StatsDelta {
  readonly totals = new Map<CustomerStatus, { customers: number; cents: number }>();
  /** Keyed by day and status (day * 4 + the status' place), so adding a customer builds no key. */
  readonly days = new Map<number, { status: CustomerStatus; day: number; customers: number; cents: number }>();
  /** Keyed by status, then country key. */
  readonly countries = new Map<CustomerStatus, Map<string, { countryKey: string; status: CustomerStatus; customers: number }>>();

  /** Counts the customer in (sign 1) or out of (sign -1) the aggregates. */
  add(customer: Pick<CustomerRecord, 'status' | 'amountCents' | 'lastActivityAt'> & { countryKey: string }, sign: 1 | -1): void {
    const { status, amountCents, countryKey } = customer;
    const total = this.totals.get(status) ?? { customers: 0, cents: 0 };
    total.customers += sign;
    total.cents += sign * amountCents;
    this.totals.set(status, total);

    const day = dayOf(customer.lastActivityAt);
    const dayKey = day * 4 + STATUS_PLACE[status];
    const bucket = this.days.get(dayKey) ?? { status, day, customers: 0, cents: 0 };
    bucket.customers += sign;
    bucket.cents += sign * amountCents;
    this.days.set(dayKey, bucket);

    const byCountry = this.countries.get(status) ?? new Map();
    const country = byCountry.get(countryKey) ?? { countryKey, status, customers: 0 };
    country.customers += sign;
    byCountry.set(countryKey, country);
    this.countries.set(status, byCountry);
  }

  /** Adds another delta's sums to this one. */
  merge(other: StatsDelta): void {
    for (const [status, t] of other.totals) {
      const total = this.totals.get(status) ?? { customers: 0, cents: 0 };
      total.customers += t.customers;
      total.cents += t.cents;
      this.totals.set(status, total);
    }
    for (const [key, d] of other.days) {
      const bucket = this.days.get(key) ?? { status: d.status, day: d.day, customers: 0, cents: 0 };
      bucket.customers += d.customers;
      bucket.cents += d.cents;
      this.days.set(key, bucket);
    }
    for (const [status, others] of other.countries) {
      const byCountry = this.countries.get(status) ?? new Map();
      for (const [key, c] of others) {
        const country = byCountry.get(key) ?? { countryKey: c.countryKey, status: c.status, customers: 0 };
        country.customers += c.customers;
        byCountry.set(key, country);
      }
      this.countries.set(status, byCountry);
    }
  }
}

export type CustomerStats = ReturnType<typeof createCustomerStats>;

/** Returns the aggregate writes and reads, prepared once. */
export function createCustomerStats(db: Db) {
  const upsertTotal = db.prepare(
    `INSERT INTO customer_totals (status, customers, amount_cents) VALUES (?, ?, ?)
     ON CONFLICT (status) DO UPDATE SET customers = customers + excluded.customers, amount_cents = amount_cents + excluded.amount_cents`,
  );
  const upsertDay = db.prepare(
    `INSERT INTO customer_days (status, day, customers, amount_cents) VALUES (?, ?, ?, ?)
     ON CONFLICT (status, day) DO UPDATE SET customers = customers + excluded.customers, amount_cents = amount_cents + excluded.amount_cents`,
  );
  const upsertCountry = db.prepare(
    `INSERT INTO customer_countries (country_key, status, customers) VALUES (?, ?, ?)
     ON CONFLICT (country_key, status) DO UPDATE SET customers = customers + excluded.customers`,
  );
  const dropEmptyDay = db.prepare('DELETE FROM customer_days WHERE status = ? AND day = ? AND customers = 0');
  const dropEmptyCountry = db.prepare('DELETE FROM customer_countries WHERE country_key = ? AND status = ? AND customers = 0');
  const totals = db.prepare<[], { status: CustomerStatus; customers: number; amount_cents: number }>(
    'SELECT status, customers, amount_cents FROM customer_totals',
  );
  const countryTotal = db.prepare<[string], { n: number }>('SELECT coalesce(sum(customers), 0) AS n FROM customer_countries WHERE country_key = ?');
  const countryStatusTotal = db.prepare<[string, string], { n: number }>(
    'SELECT coalesce(sum(customers), 0) AS n FROM customer_countries WHERE country_key = ? AND status = ?',
  );
  const activeDaysBefore = db.prepare<[number], { n: number }>(
    `SELECT coalesce(sum(customers), 0) AS n FROM customer_days WHERE status = 'active' AND day < ?`,
  );
  const activeBetween = db.prepare<[number, number], { n: number }>(
    `SELECT count(*) AS n FROM customers INDEXED BY customers_by_activity
     WHERE last_activity_at >= ? AND last_activity_at < ? AND status = 'active'`,
  );
  const daysFrom = db.prepare<[number, number], { status: CustomerStatus; day: number; customers: number; amount_cents: number }>(
    'SELECT status, day, customers, amount_cents FROM customer_days WHERE day >= ? AND day < ? ORDER BY day',
  );

  return {
    /** Writes a delta; call inside the transaction that changed the customers. */
    apply(delta: StatsDelta): void {
      for (const [status, t] of delta.totals) if (t.customers !== 0 || t.cents !== 0) upsertTotal.run(status, t.customers, t.cents);
      for (const d of delta.days.values()) {
        if (d.customers === 0 && d.cents === 0) continue;
        upsertDay.run(d.status, d.day, d.customers, d.cents);
        if (d.customers < 0) dropEmptyDay.run(d.status, d.day);
      }
      for (const byCountry of delta.countries.values()) {
        for (const c of byCountry.values()) {
          if (c.customers === 0) continue;
          upsertCountry.run(c.countryKey, c.status, c.customers);
          if (c.customers < 0) dropEmptyCountry.run(c.countryKey, c.status);
        }
      }
    },

    /** Returns customers and cents per status, zeros included. */
    totalsByStatus(): Record<CustomerStatus, { customers: number; cents: number }> {
      const out = Object.fromEntries(CUSTOMER_STATUSES.map((s) => [s, { customers: 0, cents: 0 }])) as Record<
        CustomerStatus,
        { customers: number; cents: number }
      >;
      for (const row of totals.all()) out[row.status] = { customers: row.customers, cents: row.amount_cents };
      return out;
    },

    /** Returns how many customers match a status and country filter, without scanning customers. */
    countMatching(status: CustomerStatus | undefined, countryKey: string | undefined): number {
      if (countryKey !== undefined) return (status ? countryStatusTotal.get(countryKey, status) : countryTotal.get(countryKey))!.n;
      const all = this.totalsByStatus();
      return status ? all[status].customers : all.active.customers + all.inactive.customers + all.churned.customers;
    },

    /** Returns the status counts and the number of active customers idle for more than 60 days at `now`. */
    healthInputs(now: Date): { counts: StatusCounts; staleActives: number } {
      const all = this.totalsByStatus();
      const cutoff = now.getTime() - STALE_AFTER_DAYS * DAY_MS;
      const cutoffDay = dayOf(cutoff);
      const staleActives = activeDaysBefore.get(cutoffDay)!.n + activeBetween.get(cutoffDay * DAY_MS, cutoff)!.n;
      return {
        counts: { active: all.active.customers, inactive: all.inactive.customers, churned: all.churned.customers },
        staleActives,
      };
    },

    /** Returns the per-day buckets of days `[fromDay, toDay)`, in day order. */
    daysBetween(fromDay: number, toDay: number) {
      return daysFrom.all(fromDay, toDay);
    },
  };
}
