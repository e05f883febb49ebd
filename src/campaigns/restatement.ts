// Whether copy restates the objective: 6 consecutive words of it (product.md section 14), read across sentences,
// title, message and call to action, with contractions, per cents and percent signs spelled out.
import type { CampaignCopy } from '../domain/campaigns.ts';

/** The words of a text as typed: lower case, apostrophes straightened, punctuation and sentence breaks ignored. */
export function wordsOf(text: string): string[] {
  return (text.toLowerCase().replaceAll('’', "'").match(/[\p{L}\p{N}%$€£']+/gu) ?? []).map((w) => w.replace(/^'+|'+$/g, '')).filter(Boolean);
}

// "We've" restates "we have" as much as "we've" does: contractions and percentages are also compared spelled out.
const SPELLED: [RegExp, string][] = [
  [/^won't$/, 'will not'], [/^can't$/, 'can not'], [/^(.+)n't$/, '$1 not'], [/^(.+)'ve$/, '$1 have'], [/^(.+)'re$/, '$1 are'],
  [/^(.+)'ll$/, '$1 will'], [/^(.+)'d$/, '$1 would'], [/^i'm$/, 'i am'], [/^let's$/, 'let us'],
  [/^(it|that|there|here|what|who|where|how|now|he|she)'s$/, '$1 is'], [/^(\d+(?:\.\d+)?)%$/, '$1 percent'],
];

/** The words of a text spelled out: "we've" as "we have", "20%" and "20 per cent" as "20 percent". */
export function spelledWordsOf(text: string): string[] {
  const spelled = wordsOf(text).flatMap((word) => {
    if (!/['%]/.test(word)) return [word];
    const rule = SPELLED.find(([pattern]) => pattern.test(word));
    return rule ? word.replace(rule[0], rule[1]).split(' ') : [word];
  });
  return spelled.includes('cent') ? spelled.join(' ').replace(/\bper cent\b/g, 'percent').split(' ') : spelled;
}

/**
 * Returns a check of segments (read in order, as one text) against the objective: which of them hold its first run
 * of `run` consecutive words, as typed or spelled out, or undefined when none does. That is what restating means.
 */
export function restatementOf(objective: string, run = 6): (segments: readonly string[]) => number[] | undefined {
  const read = new Map<string, string[][]>();
  // The same phrases are read again for every arrangement tried: read each once, as typed and spelled out.
  const forms = (text: string) => read.get(text) ?? read.set(text, [wordsOf(text), spelledWordsOf(text)]).get(text)!;
  const runs = forms(objective).map((source) => new Set(source.slice(0, Math.max(0, source.length - run + 1)).map((_, i) => source.slice(i, i + run).join(' '))));
  const known = new Set(forms(objective).flat());
  return (segments) => {
    for (const [form, found] of runs.entries()) {
      if (found.size === 0) continue;
      const words: string[] = [];
      const owners: number[] = [];
      segments.forEach((segment, owner) => forms(segment)[form]!.forEach((word) => (words.push(word), owners.push(owner))));
      for (let i = 0; i + run <= words.length; i++) {
        if (known.has(words[i]!) && found.has(words.slice(i, i + run).join(' '))) return [...new Set(owners.slice(i, i + run))];
      }
    }
    return undefined;
  };
}

/** Whether the text holds `run` consecutive words of the objective. */
export const restates = (text: string, objective: string, run = 6): boolean => restatementOf(objective, run)([text]) !== undefined;

/** The copy as one text, title, message and call to action in that order: what must not restate the objective. */
export const copyText = (copy: CampaignCopy) => `${copy.title}\n${copy.message}\n${copy.callToAction}`;

