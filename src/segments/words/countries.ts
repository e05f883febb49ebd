// Countries: the table of common names, codes and adjectives, the keys of a name, and the index of every way of
// naming a stored country, with its two caches (stored names' keys, and the last index built).
import { tokenize } from './tokens.ts';
import { set } from './vocabulary.ts';

const MAX_COUNTRY_LENGTH = 80;

/**
 * Common names, codes and adjectives for countries, each line one country; used only when one stored name fits. Codes
 * that are also words or abbreviations (IT, AT, BE, NO, CA for California, "i.e.") are left out.
 */
const COUNTRY_ALIASES = [
  'united kingdom|uk|gb|great britain|britain|british',
  'united states|united states of america|us|usa|america|american',
  'germany|deutschland|de|german',
  'france|fr|french',
  'spain|espana|es|spanish',
  'italy|italia|italian',
  'netherlands|holland|nederland|nl|dutch',
  'belgium|belgie|belgique|belgian',
  'austria|osterreich|austrian',
  'switzerland|schweiz|suisse|svizzera|ch|swiss',
  'ireland|republic of ireland|eire|irish',
  'portugal|pt|portuguese',
  'poland|polska|pl|polish',
  'sweden|sverige|se|swedish',
  'denmark|danmark|dk|danish',
  'norway|norge|norwegian',
  'finland|suomi|fi|finnish',
  'czech republic|czechia|cz|czech',
  'greece|hellas|gr|greek',
  'canada|canadian',
  'australia|au|aus|australian',
  'new zealand|nz',
  'japan|jp|japanese',
  'china|cn|chinese',
  'brazil|brasil|br|brazilian',
  'mexico|mx|mexican',
  'south korea|republic of korea|kr',
  'united arab emirates|uae|ae',
  'turkey|turkiye|tr|turkish',
  'south africa|za',
  'luxembourg|lu',
  'russia|russian federation|ru|russian',
];
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

const ALIAS_KEYS = COUNTRY_ALIASES.map((line) => line.split('|').map(keysOf));

export interface CountryEntry {
  keys: string[];
  /** The stored spelling, or null when the name fits more than one stored country. */
  stored: string | null;
  /** A short code: it counts only in capitals or after "the". */
  short: boolean;
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
  const add = (keys: string[], stored: string | null) => {
    const joined = keys.join(' ');
    if (keys.length === 0 || entries.has(joined)) return;
    const short = keys.length === 1 && /^[a-z]{1,3}$/.test(joined) && !ANY_CASE.has(joined);
    entries.set(joined, { keys, stored, short });
  };
  for (const raw of countries) {
    const name = raw.trim();
    if (name.length === 0 || name.length > MAX_COUNTRY_LENGTH) continue; // no valid condition could name it
    const keys = cachedKeysOf(name);
    const joined = keys.join(' ');
    if (keys.length === 0 || storedByKey.has(joined)) continue;
    storedByKey.set(joined, name);
    add(keys, name);
  }
  for (const names of ALIAS_KEYS) {
    const fits = [...new Set(names.map((k) => k.join(' ')).filter((k) => storedByKey.has(k)))];
    if (fits.length === 0) continue;
    const stored = fits.length === 1 ? (storedByKey.get(fits[0] as string) ?? null) : null;
    for (const keys of names) add(keys, stored);
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
