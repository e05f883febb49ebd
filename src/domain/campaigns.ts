// Campaigns: channels and their limits, tones, and the review workflow of product.md section 6.
import type { Role } from './auth-user.ts';

export const CHANNELS = ['sms', 'email', 'push'] as const;
export type Channel = (typeof CHANNELS)[number];

export const TONES = ['professional', 'friendly', 'urgent', 'promotional'] as const;
export type Tone = (typeof TONES)[number];

export const CAMPAIGN_STATUSES = ['draft', 'in_review', 'approved', 'sent'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** Where a version of a campaign's copy came from. */
export const VERSION_SOURCES = ['generated', 'revised', 'edited', 'variant', 'restored'] as const;
export type VersionSource = (typeof VERSION_SOURCES)[number];

/** The three content parts of a campaign. */
export interface CampaignCopy {
  title: string;
  message: string;
  callToAction: string;
}

/** Longest title, message and call to action per channel, in characters. */
export const CHANNEL_LIMITS: Record<Channel, Record<keyof CampaignCopy, number>> = {
  sms: { title: 60, message: 320, callToAction: 40 },
  push: { title: 60, message: 140, callToAction: 40 },
  email: { title: 120, message: 1200, callToAction: 60 },
};

/** Channels whose message must itself carry the call to action (there is no separate button). */
export const CTA_IN_MESSAGE: ReadonlySet<Channel> = new Set(['sms', 'push']);

/** The moves of the review workflow, from each status. */
export const MOVES: Record<CampaignStatus, readonly CampaignStatus[]> = {
  draft: ['in_review'],
  in_review: ['approved', 'draft'],
  approved: ['sent', 'draft'],
  sent: [],
};

const REVIEWERS: readonly Role[] = ['marketing_lead', 'admin'];

/**
 * Returns whether the role may ask for the move, judged before the campaign's state is: approving and marking sent
 * need a reviewer whatever the state; moving an `in_review` campaign back to draft (requesting changes) does too.
 */
export function mayMove(role: Role, from: CampaignStatus, to: CampaignStatus): boolean {
  const reviewOnly = to === 'approved' || to === 'sent' || (from === 'in_review' && to === 'draft');
  return !reviewOnly || REVIEWERS.includes(role);
}

/** Returns whether `from -> to` is a move of the workflow (setting the same status is a no-op, not a move). */
export function isMove(from: CampaignStatus, to: CampaignStatus): boolean {
  return MOVES[from].includes(to);
}
