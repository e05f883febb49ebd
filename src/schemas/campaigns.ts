// Schemas of campaigns, their generation, edits, review moves, list query and trail.
import * as v from 'valibot';
import { CAMPAIGN_STATUSES, CHANNEL_LIMITS, CHANNELS, TONES, type Channel as ChannelName } from '../domain/campaigns.ts';
import { Counter, MAX_COUNTER, Timestamp, TrimmedText } from './common.ts';

const oneOf = <T extends readonly string[]>(values: T) => v.picklist(values, `Must be one of ${values.join(', ')}.`);

export const CampaignStatus = oneOf(CAMPAIGN_STATUSES);
export const Channel = oneOf(CHANNELS);
export const Tone = oneOf(TONES);

/** A brief may run over several lines: line breaks and tabs are allowed, other control characters are not. */
const Objective = v.pipe(
  v.string('Must be a string.'),
  v.trim(),
  v.minLength(10, 'Must be at least 10 characters long.'),
  v.maxLength(600, 'Must be at most 600 characters long.'),
  v.regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, 'Must not contain control characters other than line breaks.'),
);

export const GenerateRequest = v.object({
  segmentId: v.pipe(v.string('Must be the id of a saved segment.'), v.minLength(1, 'Must be the id of a saved segment.')),
  objective: Objective,
  channel: Channel,
  tone: Tone,
});

/** A part of the copy on edit: trimmed, non-empty, within the longest limit of any channel (the campaign's own is checked after). */
const EditedPart = (max: number) =>
  v.pipe(
    v.string('Must be a string.'),
    v.trim(),
    v.minLength(1, 'Must not be empty.'),
    v.maxLength(max, `Must be at most ${max} characters long.`),
    v.regex(/^[^\u0000-\u0008\u000b-\u001f\u007f]*$/, 'Must not contain control characters other than line breaks.'),
  );

/** The edit of a draft; every part optional. */
export const CampaignChanges = v.object({
  title: v.optional(EditedPart(CHANNEL_LIMITS.email.title)),
  message: v.optional(EditedPart(CHANNEL_LIMITS.email.message)),
  callToAction: v.optional(EditedPart(CHANNEL_LIMITS.email.callToAction)),
});

/** The same parts checked against one channel's limits. */
export function channelCopy(channel: ChannelName) {
  const limits = CHANNEL_LIMITS[channel];
  const within = (max: number) => v.pipe(v.string(), v.maxLength(max, `Must be at most ${max} characters long for ${channel}.`));
  return v.object({ title: within(limits.title), message: within(limits.message), callToAction: within(limits.callToAction) });
}

export const StatusChange = v.object({
  status: CampaignStatus,
  note: v.optional(TrimmedText(1, 1000)),
});

const positive = (max: number, fallback: number) =>
  v.optional(v.pipe(v.number(), v.integer('Must be a whole number.'), v.minValue(1, 'Must be at least 1.'), v.maxValue(max, `Must be at most ${max}.`)), fallback);

export const CampaignListQuery = v.object({
  status: v.optional(CampaignStatus),
  channel: v.optional(Channel),
  segmentId: v.optional(v.pipe(v.string(), v.minLength(1, 'Must not be empty.'), v.maxLength(200, 'Must be at most 200 characters.'))),
  page: positive(MAX_COUNTER, 1),
  limit: positive(200, 50),
});

export const Campaign = v.strictObject({
  id: v.string(),
  segmentId: v.string(),
  segmentName: v.string(),
  objective: v.string(),
  channel: Channel,
  tone: Tone,
  title: v.pipe(v.string(), v.minLength(1)),
  message: v.pipe(v.string(), v.minLength(1)),
  callToAction: v.pipe(v.string(), v.minLength(1)),
  status: CampaignStatus,
  model: v.pipe(v.string(), v.description('Which generator wrote it: `local`, or the provider\'s model name.')),
  createdBy: v.pipe(v.string(), v.description('The id of the user who generated it.')),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const CampaignPage = v.object({
  items: v.array(Campaign),
  total: Counter,
  page: v.pipe(v.number(), v.integer(), v.minValue(1)),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
});

export const CampaignEventList = v.array(
  v.object({
    from: v.nullable(CampaignStatus),
    to: CampaignStatus,
    note: v.nullable(v.string()),
    userId: v.string(),
    userName: v.nullable(v.string()),
    at: Timestamp,
  }),
);
