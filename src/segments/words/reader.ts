// The Reader: the tokens of one description with the country index, and what the rules read with it: phrases,
// numbers in digits or words, comparisons, ranges and quantities on the scales of days, counts and amounts, country
// names; it tries the rules at a position (memoized). Also the types of a reading (Unit, Bound, Quantity, Hit, Rule).
import type { Condition, NumericOperator } from '../../domain/segments.ts';
import type { CountryEntry } from './countries.ts';
import { RULES } from './rules.ts';
import type { Token } from './tokens.ts';
import {
  COMPARATORS,
  COMPASS,
  CONNECTORS,
  CURRENCY_CODES,
  CURRENCY_SYMBOLS,
  CURRENCY_WORDS,
  DAY_UNITS,
  ONES,
  PERIOD_WORDS,
  POSTFIXES,
  PURCHASE_NOUNS,
  QUALIFIERS,
  QUALIFIER_PREPS,
  RANGE_LINKS,
  SCALES,
  SEPARATORS,
  SILENT,
  TENS,
  TIMES_WORDS,
  TIME_WORDS,
  type Op,
} from './vocabulary.ts';

interface Unit {
  factor: number;
  name: 'days' | 'purchases' | 'times' | 'currency';
}

export type Bound = [NumericOperator, number];
interface Measure {
  value: number;
  unit: Unit | undefined;
  end: number;
}
interface Scale {
  /** Reads one number with its own unit if any: "3 months", "$500", "twice". */
  measure(i: number, allowAnd: boolean): Measure | undefined;
  /** Reads a unit written once after the numbers: "orders" in "between 2 and 5 orders". */
  unit(i: number): { unit: Unit; end: number } | undefined;
}
export interface Quantity {
  form: 'bound' | 'range' | 'exact' | 'bare';
  bounds: Bound[];
  /** The unit of each number, undefined where none was written. */
  units: (Unit | undefined)[];
  end: number;
}
/** A rule's reading: conditions, or a phrase that must be reported (`extend`: up to the end of its clause). */
export type Hit = { start?: number; end: number; conditions: Condition[] } | { start?: number; end: number; reject: true; extend?: boolean };
export type Rule = (r: Reader, i: number) => Hit | undefined;

export class Reader {
  readonly n: number;
  private readonly memo = new Map<number, Hit | null>();
  private readonly quantities = new Map<number, Quantity | undefined>();
  readonly days: Scale;
  readonly counts: Scale;
  readonly amounts: Scale;

  constructor(
    readonly tokens: Token[],
    readonly countries: Map<string, CountryEntry[]>,
    readonly shouting: boolean,
  ) {
    this.n = tokens.length;
    const dayUnit = (i: number) => {
      const factor = DAY_UNITS[this.key(i)];
      return factor === undefined ? undefined : { unit: { factor, name: 'days' } as Unit, end: i + 1 };
    };
    this.days = {
      measure: (i, allowAnd) => {
        const one = (this.key(i) === 'a' || this.key(i) === 'an') && dayUnit(i + 1);
        if (one) return { value: 1, unit: one.unit, end: one.end };
        const number = this.number(i, allowAnd);
        if (!number) return undefined;
        const unit = dayUnit(number.end);
        return { value: number.value, unit: unit?.unit, end: unit?.end ?? number.end };
      },
      unit: dayUnit,
    };
    const countUnit = (i: number) => {
      const k = this.key(i);
      if (PURCHASE_NOUNS.has(k)) return { unit: { factor: 1, name: 'purchases' } as Unit, end: i + 1 };
      if (k === 'time' || k === 'times') return { unit: { factor: 1, name: 'times' } as Unit, end: i + 1 };
      return undefined;
    };
    this.counts = {
      measure: (i, allowAnd) => {
        const times = TIMES_WORDS[this.key(i)];
        if (times !== undefined) return { value: times, unit: { factor: 1, name: 'times' }, end: i + 1 };
        const number = this.number(i, allowAnd);
        if (!number) return undefined;
        const unit = countUnit(number.end);
        return { value: number.value, unit: unit?.unit, end: unit?.end ?? number.end };
      },
      unit: countUnit,
    };
    const currency = (i: number, prefix: boolean) => {
      const k = this.key(i);
      return CURRENCY_SYMBOLS.has(k) || CURRENCY_CODES.has(k) || (!prefix && CURRENCY_WORDS.has(k));
    };
    this.amounts = {
      measure: (i, allowAnd) => {
        const before = currency(i, true);
        const j = before ? i + 1 : i;
        const number = this.key(j) === 'nothing' ? { value: 0, end: j + 1 } : this.number(j, allowAnd);
        if (!number) return undefined;
        const after = currency(number.end, false);
        const unit: Unit | undefined = before || after ? { factor: 1, name: 'currency' } : undefined;
        return { value: number.value, unit, end: number.end + (after ? 1 : 0) };
      },
      unit: (i) => (currency(i, false) ? { unit: { factor: 1, name: 'currency' }, end: i + 1 } : undefined),
    };
  }

  key(i: number): string {
    return this.tokens[i]?.key ?? '';
  }

  /** The end of the longest phrase of `list` starting at `i`, or -1. */
  phrase(i: number, list: readonly string[][]): number {
    if (i < 0) return -1;
    next: for (const words of list) {
      for (let k = 0; k < words.length; k++) if (this.key(i + k) !== words[k]) continue next;
      return i + words.length;
    }
    return -1;
  }

  /** `i` moved past an optional phrase of `list`. */
  optional(i: number, list: readonly string[][]): number {
    const end = this.phrase(i, list);
    return end < 0 ? i : end;
  }

  skip(i: number, words: Set<string>): number {
    while (i < this.n && words.has(this.key(i))) i++;
    return i;
  }

  /** Where a phrase ends: a separator, connector or audience word, the end, or the start of another reading. */
  boundary(i: number): boolean {
    const t = this.tokens[i];
    if (!t) return true;
    return SEPARATORS.has(t.key) || CONNECTORS.has(t.key) || SILENT.has(t.key);
  }

  /** A number in digits or words at `i`: "1,000", "2.5k", "1.5 million", "twenty-five", "a dozen", "a couple of". */
  number(i: number, allowAnd: boolean): { value: number; end: number } | undefined {
    const t = this.tokens[i];
    if (!t) return undefined;
    if (t.kind === 'number') {
      if (!Number.isFinite(t.num)) return undefined;
      const scale = SCALES[this.key(i + 1)];
      return scale === undefined ? { value: t.num as number, end: i + 1 } : { value: (t.num as number) * scale, end: i + 2 };
    }
    let j = i;
    if (t.key === 'a' || t.key === 'an') {
      if (this.key(i + 1) === 'couple') return { value: 2, end: this.key(i + 2) === 'of' ? i + 3 : i + 2 };
      if (SCALES[this.key(i + 1)] === undefined) return undefined;
      j = i + 1;
    }
    let total = 0;
    let current = j > i ? 1 : 0;
    let last: 'start' | 'ones' | 'tens' | 'scale' = j > i ? 'ones' : 'start';
    for (;;) {
      const k = this.key(j);
      const parts = k.split('-');
      const small = parts.every((p) => p in ONES || p in TENS) && parts.length <= 2;
      if (small && (last === 'start' || last === 'scale' || (last === 'tens' && parts.length === 1 && (ONES[k] ?? 10) < 10))) {
        const value = parts.reduce((sum, p) => sum + (ONES[p] ?? TENS[p] ?? 0), 0);
        current += value;
        last = parts.length === 1 && k in TENS ? 'tens' : 'ones';
      } else if (k in SCALES && last !== 'start') {
        const scale = SCALES[k] as number;
        if (scale >= 1000) {
          total += current * scale;
          current = 0;
        } else current *= scale;
        last = 'scale';
      } else if (allowAnd && k === 'and' && last === 'scale' && (this.key(j + 1) in ONES || this.key(j + 1) in TENS)) {
        // "two hundred and fifty": the "and" belongs to the number
      } else break;
      j++;
    }
    return last === 'start' ? undefined : { value: total + current, end: j };
  }

  comparator(i: number): { op: Op; end: number } | undefined {
    for (const [words, op] of COMPARATORS) {
      const end = this.phrase(i, [words]);
      if (end >= 0) return { op, end };
    }
    return undefined;
  }

  postfix(i: number): { op: Op; end: number } | undefined {
    for (const [words, op] of POSTFIXES) {
      const end = this.phrase(i, [words]);
      // "at least 5 orders" after an amount starts a new reading; it is no postfix
      if (end >= 0 && (words[0] === '+' || words[0] === 'or' || !this.number(end, false))) return { op, end };
    }
    return undefined;
  }

  /** A comparison, range or bare number on a scale: "more than 3 months", "between $100 and $500", "5+ orders". */
  quantity(i: number, scale: Scale): Quantity | undefined {
    const slot = i * 3 + (scale === this.days ? 0 : scale === this.counts ? 1 : 2);
    if (!this.quantities.has(slot)) this.quantities.set(slot, this.readQuantity(i, scale));
    return this.quantities.get(slot);
  }

  private readQuantity(i: number, scale: Scale): Quantity | undefined {
    let form: Quantity['form'] | undefined;
    let op: Op = 'eq';
    let measures: Measure[] = [];
    const lead = this.key(i);
    const range = (from: number, links: Set<string> | undefined) => {
      // "between two hundred and fifty and 300" first, then "between two hundred and 300"
      for (const allowAnd of [true, false]) {
        const a = scale.measure(from, allowAnd);
        const b = a && links?.has(this.key(a.end)) ? scale.measure(a.end + 1, true) : undefined;
        if (a && b) {
          [measures, form] = [[a, b], 'range'];
          return true;
        }
      }
      return false;
    };
    if (lead !== 'between' && lead !== 'from') {
      const c = this.comparator(i);
      const m = c && scale.measure(c.end, true);
      if (c && m) {
        [form, op, measures] = [c.op === 'eq' ? 'exact' : 'bound', c.op, [m]];
      } else if (!range(i, RANGE_LINKS[''])) {
        const plain = scale.measure(i, true);
        if (!plain) return undefined;
        measures = [plain];
        form = 'bare';
        const p = this.postfix(plain.end);
        if (p) [form, op, measures] = ['bound', p.op, [{ ...plain, end: p.end }]];
      }
    } else if (!range(i + 1, RANGE_LINKS[lead])) return undefined;
    const last = measures[measures.length - 1] as Measure;
    let end = last.end;
    let shared: Unit | undefined;
    if (!last.unit) {
      const u = scale.unit(end);
      if (u) [shared, end] = [u.unit, u.end];
    }
    if (form === 'bare') {
      const p = this.postfix(end);
      if (p) [form, op, end] = ['bound', p.op, p.end];
    }
    const units = measures.map((m) => m.unit ?? shared ?? last.unit); // "between 2 and 5 orders"
    const values = measures.map((m, k) => m.value * (units[k]?.factor ?? 1));
    if (!values.every(Number.isFinite)) return undefined;
    const [lo, hi] = [Math.min(...values), Math.max(...values)];
    const value = values[0] as number;
    if (form === 'range' && lo === hi) form = 'exact';
    const bounds: Bound[] =
      form === 'range' ? [['gte', lo], ['lte', hi]]
      : form === 'exact' || form === 'bare' || op === 'eq' ? [['gte', value], ['lte', value]]
      : [[op, value]];
    return { form: form ?? 'bare', bounds, units, end };
  }

  /** The stored country named at `i` (after an optional "the"), or null when the name is ambiguous; whether a demonym. */
  country(i: number): { stored: string | null; end: number; demonym: boolean } | undefined {
    const from = this.key(i) === 'the' ? i + 1 : i;
    const first = this.tokens[from];
    if (!first) return undefined;
    if (COMPASS.has(this.key(from - 1))) return undefined; // "South America" is not America
    for (const entry of this.countries.get(first.key) ?? []) {
      if (!entry.keys.every((k, n) => this.key(from + n) === k)) continue;
      if (entry.short && !((first.caps && !this.shouting) || this.key(from - 1) === 'the')) continue;
      if (this.key(from + entry.keys.length) === '$') continue; // "US$" written apart
      return { stored: entry.stored, end: from + entry.keys.length, demonym: entry.demonym };
    }
    return undefined;
  }

  /** Whether the words at `i` limit a count or an amount to a period or a kind ("per month", "on shoes"). */
  qualifier(i: number): boolean {
    const k = this.key(i);
    if (QUALIFIERS.has(k)) return true;
    if (!QUALIFIER_PREPS.has(k)) return false;
    for (let j = i + 1; j <= i + 4 && !this.boundary(j); j++) if (TIME_WORDS.has(this.key(j)) || PERIOD_WORDS.has(this.key(j))) return true;
    return false;
  }

  /** The first rule that reads the tokens at `i` (rules depend on the position only, so this is memoized). */
  read(i: number): Hit | undefined {
    if (!this.memo.has(i)) {
      let hit: Hit | null = null;
      for (const rule of RULES) {
        hit = rule(this, i) ?? null;
        if (hit) break;
      }
      this.memo.set(i, hit);
    }
    return this.memo.get(i) ?? undefined;
  }

  /** Whether a phrase may end at `i`: a boundary, or another reading starts there. */
  clauseEnds(i: number): boolean {
    return this.boundary(i) || this.read(i) !== undefined;
  }
}
