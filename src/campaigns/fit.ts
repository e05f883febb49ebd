// Fitting copy to a channel: clean text, cut at word boundaries, the call to action inside sms and push messages.
import { CHANNEL_LIMITS, CTA_IN_MESSAGE, type CampaignCopy, type Channel } from '../domain/campaigns.ts';

/** Returns the text with control characters removed and white space collapsed (line breaks kept where `keepLines`). */
export function cleanText(text: string, keepLines = false): string {
  const withoutControls = text.replace(/\r\n?/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]/g, '');
  if (!keepLines) return withoutControls.replace(/\s+/g, ' ').trim();
  return withoutControls
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Returns the text cut to at most `max` characters at the last word boundary that keeps at least half of it
 * (a hard cut otherwise), without dangling punctuation unless nothing else would be left.
 */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max + 1);
  const boundary = Math.max(head.lastIndexOf(' '), head.lastIndexOf('\n'));
  const cut = boundary >= max / 2 ? head.slice(0, boundary) : hardCut(text, max);
  // A part made only of dashes and commas would otherwise come out empty, which no campaign may have.
  return cut.replace(/[\s,;:(\-–—]+$/u, '') || hardCut(text, max).trimEnd();
}

/** The first `max` UTF-16 units, one fewer where the cut would split a surrogate pair (an emoji) in two. */
function hardCut(text: string, max: number): string {
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

function containsCta(message: string, cta: string): boolean {
  return message.toLowerCase().includes(cta.toLowerCase());
}

/**
 * Returns the copy within the channel's limits: every part cleaned and cut at word boundaries, and for sms and
 * push a message that contains the call to action (appended when missing), the whole still within the limit.
 */
export function fitCopy(copy: CampaignCopy, channel: Channel): CampaignCopy {
  const limits = CHANNEL_LIMITS[channel];
  const title = cutAtWord(cleanText(copy.title), limits.title);
  const callToAction = cutAtWord(cleanText(copy.callToAction), limits.callToAction);
  let message = cleanText(copy.message, channel === 'email');
  if (!CTA_IN_MESSAGE.has(channel)) return { title, message: cutAtWord(message, limits.message), callToAction };
  if (!(containsCta(message, callToAction) && message.length <= limits.message)) {
    // Drop a call to action the cut would split, then make room for it at the end.
    const at = message.toLowerCase().lastIndexOf(callToAction.toLowerCase());
    if (at >= 0) message = `${message.slice(0, at)} ${message.slice(at + callToAction.length)}`.replace(/\s+/g, ' ').trim();
    const body = cutAtWord(message, limits.message - callToAction.length - 2);
    message = body ? `${body}${/[.!?…:]$/u.test(body) ? '' : '.'} ${callToAction}` : callToAction;
  }
  return { title, message, callToAction };
}
