// The local generator: deterministic campaign copy written from the brief alone, without a model.
import { CHANNEL_LIMITS, type CampaignCopy, type Tone } from '../domain/campaigns.ts';
import type { Brief } from './brief.ts';
import { cleanText, cutAtWord, fitCopy } from './fit.ts';

export interface Voice {
  opener: string;
  closer: string;
  callToAction: string;
  emailButton: string;
  signOff: string;
  title: (topic: string) => string;
}

/** The local generator's voice per tone: its stock phrases, also what a local revision swaps. */
export const VOICES: Record<Tone, Voice> = {
  professional: {
    opener: 'Hello,',
    closer: 'We would be glad to help you make the most of it.',
    callToAction: 'Learn more',
    emailButton: 'Read the details',
    signOff: 'Kind regards,',
    title: (topic) => topic,
  },
  friendly: {
    opener: 'Hi there!',
    closer: "We'd love to see you again soon.",
    callToAction: 'Take a look',
    emailButton: 'Take a look',
    signOff: 'Warm wishes,',
    title: (topic) => `Something for you: ${lowerFirst(topic)}`,
  },
  urgent: {
    opener: 'Time is running out.',
    closer: "This won't last long, so don't wait.",
    callToAction: 'Act now',
    emailButton: 'Act now before it ends',
    signOff: 'Hurry,',
    title: (topic) => `Last chance: ${lowerFirst(topic)}`,
  },
  promotional: {
    opener: 'Good news!',
    closer: "It's our way of saying thank you.",
    callToAction: 'Claim your offer',
    emailButton: 'Claim your offer',
    signOff: 'Enjoy,',
    title: (topic) => `Just for you: ${lowerFirst(topic)}`,
  },
};

export function upperFirst(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function lowerFirst(text: string): string {
  // Keep acronyms and names that start with two capitals ("VIP", "EU") as they are.
  return /^[A-Z][a-z]/.test(text) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** Words a cut phrase should not end on ("15% off their"): they promise a word that was cut away. */
const DANGLING = new Set(['a', 'an', 'the', 'their', 'your', 'our', 'my', 'its', 'to', 'for', 'with', 'of', 'on', 'in', 'at', 'by', 'and', 'or', 'from', 'into', 'this', 'that']);

/** Returns the phrase without the function words a cut left at its end (keeping at least one word). */
function withoutDanglingWord(phrase: string): string {
  const words = phrase.split(' ');
  while (words.length > 1 && DANGLING.has(words[words.length - 1]!.toLowerCase())) words.pop();
  return words.join(' ').replace(/[\s,;:(\-–—]+$/u, '');
}

/** The objective's first sentence as a headline-like phrase, without its closing punctuation. */
function topicOf(objective: string): string {
  const text = cleanText(objective);
  const first = /^(.+?[.!?])(\s|$)/.exec(text)?.[1] ?? text;
  const topic = cutAtWord(first, 160).replace(/[.!?]+$/, '');
  // An objective of nothing but punctuation is still the objective: an empty topic would leave the title empty.
  return upperFirst(topic || cutAtWord(text, 160));
}

function audienceLine(brief: Brief): string {
  const who = brief.audienceSize > 1 ? `one of ${brief.audienceSize.toLocaleString('en-US')} ${brief.audience}` : `one of our ${brief.audience}`;
  return `You are ${who}, so we wanted you to hear it from us first.`;
}

/** Adds sentences by priority while they fit in `room` characters, then returns them in reading order. */
function fill(sentences: { text: string; priority: number }[], room: number): string {
  const chosen = new Set<number>();
  let used = 0;
  const byPriority = sentences.map((s, i) => ({ ...s, i })).sort((a, b) => a.priority - b.priority);
  for (const s of byPriority) {
    const cost = s.text.length + (chosen.size > 0 ? 1 : 0);
    if (used + cost > room) continue;
    chosen.add(s.i);
    used += cost;
  }
  return sentences.filter((_, i) => chosen.has(i)).map((s) => s.text).join(' ');
}

/** Returns campaign copy for the brief: the same brief always gives the same text, within the channel's limits. */
export function localCopy(brief: Brief): CampaignCopy {
  const voice = VOICES[brief.tone];
  const topic = topicOf(brief.objective);
  const limits = CHANNEL_LIMITS[brief.channel];
  const title = withoutDanglingWord(cutAtWord(voice.title(topic), limits.title));

  if (brief.channel === 'email') {
    const message = [
      voice.opener,
      `${topic}.`,
      `${audienceLine(brief)} ${voice.closer}`,
      `${voice.signOff}\nThe team`,
    ].join('\n\n');
    return fitCopy({ title, message, callToAction: voice.emailButton }, brief.channel);
  }

  const room = limits.message - voice.callToAction.length - 1;
  const headline = `${withoutDanglingWord(cutAtWord(topic, Math.min(topic.length, room - 1)))}.`;
  const body = fill(
    [
      { text: voice.opener, priority: 2 },
      { text: headline, priority: 0 },
      { text: audienceLine(brief), priority: 3 },
      { text: voice.closer, priority: 1 },
    ],
    room,
  );
  return fitCopy({ title, message: `${body} ${voice.callToAction}`, callToAction: voice.callToAction }, brief.channel);
}
