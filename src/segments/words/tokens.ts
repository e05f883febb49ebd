// Tokens: a description cut into words, numerals and symbols (folded to lower case without accents, contractions
// split, "UK-based" read as "UK based"), and the value of a numeral as written.
import { table } from './vocabulary.ts';

export interface Token {
  /** Lower case, without accents or abbreviation dots; "–" is "-", "≥" is ">=". */
  key: string;
  start: number;
  end: number;
  /** The value of a numeral, NaN when its separators are ambiguous; undefined for words and symbols. */
  num: number | undefined;
  kind: 'word' | 'number' | 'symbol';
  /** Written in capitals or as a dotted abbreviation ("US", "U.K."). */
  caps: boolean;
}

const LEXEME = new RegExp(
  [
    String.raw`(?<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d|[.,]\d)|\d{1,3}(?:\.\d{3})+(?:,\d+)?(?!\d|[.,]\d)|\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?(?!\d)|\d+(?:[.,]\d+)?)(?<k>[kK](?![\p{L}\p{N}]))?`,
    String.raw`(?<cur>(?:US|AU|CA|NZ|HK|S)\$)`,
    String.raw`(?<abbr>(?:\p{L}\.){2,})`,
    String.raw`(?<word>[\p{L}\p{M}]+(?:['’\-][\p{L}\p{M}]+)*)`,
    String.raw`(?<sym>>=|<=|\S)`,
  ].join('|'),
  'gu',
);
const CONTRACTIONS: [string, string][] = [["n't", 'not'], ["'ve", 'have'], ["'re", 'are'], ["'ll", 'will'], ["'d", 'had'], ["'m", 'am'], ["'s", 'is']];
const NOT_BASES: Record<string, string> = table({ ca: 'can', wo: 'will', sha: 'shall', ai: 'am' });
const SYMBOL_KEYS: Record<string, string> = table({ '–': '-', '—': '-', '−': '-', '≥': '>=', '≤': '<=', '’': "'", '“': '"', '”': '"' });

const fold = (text: string) => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/’/g, "'");

/** The value of a numeral as written, or NaN when it could be read two ways ("1.000"). */
function numeral(text: string): number {
  const t = text.replace(/[ \u00a0\u202f]/g, '');
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(t)) return Number(t.replaceAll(',', ''));
  if (/^\d{1,3}(\.\d{3})+(,\d+)?$/.test(t)) {
    if (!t.includes(',') && t.split('.').length === 2) return NaN;
    return Number(t.replaceAll('.', '').replace(',', '.'));
  }
  if (/^\d+,\d{1,2}$/.test(t)) return Number(t.replace(',', '.'));
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  return NaN;
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  for (const m of text.matchAll(LEXEME)) {
    const g = m.groups ?? {};
    const raw = m[0];
    const start = m.index ?? 0;
    const end = start + raw.length;
    const caps = /\p{L}/u.test(raw) && raw === raw.toUpperCase();
    if (g.num !== undefined) {
      const value = numeral(g.num) * (g.k ? 1000 : 1);
      tokens.push({ key: raw.toLowerCase(), start, end, num: value, kind: 'number', caps: false });
    } else if (g.cur !== undefined) {
      tokens.push({ key: raw.toLowerCase(), start, end, num: undefined, kind: 'symbol', caps: true });
    } else if (g.abbr !== undefined) {
      tokens.push({ key: fold(raw).replaceAll('.', ''), start, end, num: undefined, kind: 'word', caps: true });
    } else if (g.word !== undefined) {
      let key = fold(raw);
      let cut = end;
      let extra: Token | undefined;
      const contraction = CONTRACTIONS.find(([suffix]) => key.endsWith(suffix) && key.length > suffix.length);
      if (contraction) {
        key = key.slice(0, -contraction[0].length);
        cut = end - contraction[0].length;
        extra = { key: contraction[1], start: cut, end, num: undefined, kind: 'word', caps };
        if (contraction[1] === 'not') key = NOT_BASES[key] ?? key;
      } else if (key.endsWith('-based') && key.length > 6) {
        cut = end - 6; // "UK-based" reads as "UK based"
        key = key.slice(0, -6);
        extra = { key: 'based', start: cut + 1, end, num: undefined, kind: 'word', caps };
      }
      const head = raw.slice(0, cut - start);
      tokens.push({ key, start, end: cut, num: undefined, kind: 'word', caps: head === head.toUpperCase() });
      if (extra) tokens.push(extra);
    } else {
      tokens.push({ key: SYMBOL_KEYS[raw] ?? raw, start, end, num: undefined, kind: 'symbol', caps: false });
    }
  }
  return tokens;
}
