// Realistic, reproducible synthetic customers for `npm run seed`, `npm run demo` and `npm run bench`.
import { DAY_MS, type CustomerRecord, type CustomerStatus } from '../src/domain/customers.ts';

const FIRST = [
  'Anna', 'Ben', 'Carla', 'David', 'Elena', 'Felix', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Klara', 'Leon', 'Mia', 'Noah',
  'Olivia', 'Paul', 'Rosa', 'Samuel', 'Tina', 'Victor', 'Wendy', 'Yusuf', 'Zoe', 'Liam', 'Emma', 'Lucas', 'Sofia',
  'Mateo', 'Chloe', 'Omar', 'Aisha', 'Kenji', 'Priya', 'Lars', 'Freya', 'Marco', 'Giulia', 'Pierre', 'Camille', 'Jan',
  'Zofia', 'Tomas', 'Eva', 'Nils', 'Astrid', 'Diego', 'Lucia', 'Sean', 'Aoife', 'Henrik', 'Maja', 'Ruben', 'Sara',
];
const LAST = [
  'Smith', 'Jones', 'Müller', 'Schmidt', 'Garcia', 'Martin', 'Rossi', 'Novak', 'Kowalski', 'Silva', 'Dubois',
  'Jensen', 'Nielsen', 'Berg', 'Costa', 'Lopez', 'Meyer', 'Wagner', 'Weber', 'Fischer', 'Bauer', 'Koch', 'Richter',
  'Klein', 'Wolf', 'Hoffmann', 'Brown', 'Taylor', 'Wilson', 'Murphy', "O'Brien", 'Kelly', 'Andersson', 'Johansson',
  'Larsen', 'Hansen', 'Moreau', 'Laurent', 'Bernard', 'Ricci', 'Romano', 'Ferrari', 'Santos', 'Pereira', 'Oliveira',
  'Nowak', 'Wiśniewski', 'Dvořák', 'Horvat', 'Varga', 'Nagy', 'Popescu', 'Ivanova', 'De Vries', 'Janssen', 'Peeters',
];
const DOMAINS = ['example.com', 'mail.example.org', 'inbox.example.net', 'post.example.eu', 'corp.example.io', 'shop.example.co'];
/** A dozen countries, weighted roughly like a European retailer's base. */
const COUNTRIES: [string, number][] = [
  ['Germany', 22], ['France', 15], ['United Kingdom', 13], ['Spain', 10], ['Italy', 9], ['Netherlands', 7],
  ['Poland', 6], ['Sweden', 5], ['Belgium', 4], ['Austria', 4], ['Ireland', 3], ['Portugal', 2],
];

/** mulberry32: a small, fast, seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COUNTRY_WEIGHT = COUNTRIES.reduce((sum, [, w]) => sum + w, 0);

function weightedCountry(r: number): string {
  let x = r * COUNTRY_WEIGHT;
  for (const [item, w] of COUNTRIES) if ((x -= w) < 0) return item;
  return COUNTRIES[COUNTRIES.length - 1]![0];
}

/** `first.last` lower-cased and without accents, per pair: computed once, not per customer. */
const LOCAL_PARTS = FIRST.map((first) => LAST.map((last) => `${first}.${last}`.toLowerCase().normalize('NFD').replace(/[^a-z.]/g, '')));

/**
 * Yields `count` customers: statuses about 60/25/15 (active/inactive/churned), last activity over the 24 months
 * before `now` (recent for active customers, older for churned), and long-tailed spend that grows with transactions.
 * Emails are unique within a run: `first.last.<serial>@domain`, serials starting at `firstSerial`.
 */
export function* syntheticCustomers(count: number, options: { seed?: number; now?: Date; firstSerial?: number } = {}): Generator<CustomerRecord> {
  const random = prng(options.seed ?? 1);
  const now = (options.now ?? new Date()).getTime();
  const firstSerial = options.firstSerial ?? 1;
  for (let i = 0; i < count; i++) {
    const f = Math.floor(random() * FIRST.length);
    const l = Math.floor(random() * LAST.length);
    const first = FIRST[f]!;
    const last = LAST[l]!;
    const roll = random();
    const status: CustomerStatus = roll < 0.6 ? 'active' : roll < 0.85 ? 'inactive' : 'churned';
    // Days since last activity: active customers mostly within 90 days, churned ones mostly long ago.
    const spread = status === 'active' ? 120 : status === 'inactive' ? 360 : 700;
    const daysAgo = Math.min(729, Math.floor(-Math.log(1 - random() * 0.999) * (spread / 2.5)) + (status === 'churned' ? 30 : 0));
    const transactions = Math.floor(-Math.log(1 - random() * 0.999) * 12);
    const spend = transactions === 0 ? 0 : Math.round(transactions * 35 * Math.exp(random() * 2.2 - 0.6) * 100);
    yield {
      name: `${first} ${last}`,
      email: `${LOCAL_PARTS[f]![l]}.${firstSerial + i}@${DOMAINS[Math.floor(random() * DOMAINS.length)]}`,
      country: weightedCountry(random()),
      totalTransactions: transactions,
      amountCents: spend,
      lastActivityAt: now - daysAgo * DAY_MS - Math.floor(random() * DAY_MS),
      status,
    };
  }
}
