// Countries: the keys of a name, and the index of every way of naming a stored country (its names, the common names,
// codes and demonyms of country-names.ts, and demonyms' plurals), with its two caches (stored names' keys, and the
// last index built).
import { COUNTRY_NAMES } from './country-names.ts';
import { tokenize } from './tokens.ts';
import { set } from './vocabulary.ts';

const MAX_COUNTRY_LENGTH = 80;

/** Short names that are not English words, so they count in any case. */
const ANY_CASE = set('uk usa uae');

/** The keys of a country name, without a leading "the". */
function keysOf(name: string): string[] {
  const keys = tokenize(name).map((t) => t.key);
  return keys[0] === 'the' ? keys.slice(1) : keys;
}

/** Keys of stored names already read: the same few hundred names arrive with every request. */
const storedKeys = new Map<string, string[]>();
function cachedKeysOf(name: string): string[] {
  let keys = storedKeys.get(name);
  if (!keys) {
    if (storedKeys.size >= 10_000) storedKeys.clear(); // bounded; dirty data may hold many spellings
    keys = keysOf(name);
    storedKeys.set(name, keys);
  }
  return keys;
}

/** A demonym's plural is a noun for the people ("Kenyans", "Brits"), except for the forms that take none ("French"). */
const pluralOf = (demonym: string) => (/(sh|ch|ss|ese|s|x|z)$/.test(demonym) ? undefined : `${demonym}s`);

/** Per line of the table: its names (plurals of demonyms included), and its demonyms, as keys. */
const ALIAS_KEYS = COUNTRY_NAMES.map((line) => {
  const [names = '', demonyms = ''] = line.split(' / ');
  const people = demonyms.split('|').filter(Boolean);
  const plurals = people.flatMap((d) => pluralOf(d) ?? []);
  return { names: [...names.split('|'), ...plurals].map(keysOf), demonyms: people.map(keysOf) };
});

export interface CountryEntry {
  keys: string[];
  /** The stored spelling, or null when the name fits more than one stored country. */
  stored: string | null;
  /** A short code: it counts only in capitals or after "the". */
  short: boolean;
  /** A demonym ("Kenyan"): it names a country only where it qualifies people ("Kenyan customers"). */
  demonym: boolean;
}

/** The last index built, by its countries: requests in a row see the same list. */
let lastIndex: { countries: string; index: Map<string, CountryEntry[]> } | undefined;

/** Every way of naming a stored country, by first key, longest first; stored names come before aliases. */
export function indexCountries(countries: readonly string[]): Map<string, CountryEntry[]> {
  const key = JSON.stringify(countries);
  if (lastIndex?.countries !== key) lastIndex = { countries: key, index: buildIndex(countries) };
  return lastIndex.index;
}

function buildIndex(countries: readonly string[]): Map<string, CountryEntry[]> {
  const entries = new Map<string, CountryEntry>();
  const storedByKey = new Map<string, string>();
  const add = (keys: string[], stored: string | null, demonym: boolean) => {
    const joined = keys.join(' ');
    if (keys.length === 0) return;
    const held = entries.get(joined);
    // A stored name keeps its own meaning; a name or demonym two countries share ("Congolese") names neither
    if (held) {
      if (!storedByKey.has(joined) && held.stored !== stored) held.stored = null;
      return;
    }
    const short = keys.length === 1 && /^[a-z]{1,3}$/.test(joined) && !ANY_CASE.has(joined);
    entries.set(joined, { keys, stored, short, demonym });
  };
  for (const raw of countries) {
    const name = raw.trim();
    if (name.length === 0 || name.length > MAX_COUNTRY_LENGTH) continue; // no valid condition could name it
    const keys = cachedKeysOf(name);
    const joined = keys.join(' ');
    if (keys.length === 0 || storedByKey.has(joined)) continue;
    storedByKey.set(joined, name);
    add(keys, name, false);
  }
  for (const { names, demonyms } of ALIAS_KEYS) {
    const fits = [...new Set(names.map((k) => k.join(' ')).filter((k) => storedByKey.has(k)))];
    if (fits.length === 0) continue;
    const stored = fits.length === 1 ? (storedByKey.get(fits[0] as string) ?? null) : null;
    for (const keys of names) add(keys, stored, false);
    for (const keys of demonyms) add(keys, stored, true);
  }
  const index = new Map<string, CountryEntry[]>();
  for (const entry of entries.values()) {
    const first = entry.keys[0] as string;
    const list = index.get(first);
    if (list) list.push(entry);
    else index.set(first, [entry]);
  }
  for (const list of index.values()) list.sort((a, b) => b.keys.length - a.keys.length); // stable: stored names first
  return index;
}
