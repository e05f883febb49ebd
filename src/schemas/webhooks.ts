// Schemas of webhook endpoints, their requests, deliveries, and the events they carry.
import * as v from 'valibot';
import { DELIVERY_STATUSES, EVENT_TYPES } from '../domain/webhooks.ts';
import { Campaign, CampaignAudience, CampaignStatus } from './campaigns.ts';
import { Counter, MAX_COUNTER, Page, PositiveParam, Timestamp, TrimmedText } from './common.ts';
import { ImportJob } from './imports.ts';

const EventTypeName = v.picklist(EVENT_TYPES, `Must be one of ${EVENT_TYPES.join(', ')}.`);

/** Returns the URL parsed, or undefined when it is not an absolute URL. */
const parsed = (text: string) => (URL.canParse(text) ? new URL(text) : undefined);

/** Where deliveries go: an absolute http(s) URL without credentials or fragment, stored as the URL parser writes it. */
const WebhookUrl = v.pipe(
  v.string('Must be a URL.'),
  v.trim(),
  v.maxLength(2000, 'Must be at most 2000 characters long.'),
  v.check((text) => parsed(text) !== undefined, 'Must be an absolute URL such as https://hooks.example.com/campaigns.'),
  v.check((text) => ['http:', 'https:'].includes(parsed(text)?.protocol ?? ''), 'Must use http or https.'),
  v.check((text) => !parsed(text)?.username && !parsed(text)?.password, 'Must not carry a user name or password: the signature authenticates deliveries.'),
  v.check((text) => !parsed(text)?.hash, 'Must not have a fragment (#...): it is never sent.'),
  v.metadata({ format: 'uri', pattern: '^\\s*[Hh][Tt][Tt][Pp][Ss]?://[^/@#\\s]+(?:[/?][^#\\s]*)?\\s*$' }),
  v.description('An absolute http or https URL, without credentials or fragment; stored as the URL parser writes it (lower-case host, `/` path).'),
  v.transform((text) => parsed(text)?.href ?? text),
);

const Events = v.pipe(
  v.array(EventTypeName, 'Must be an array of event types.'),
  v.minLength(1, 'Must name at least one event type.'),
  v.check((types) => new Set(types).size === types.length, 'Must not name an event type twice.'),
  v.metadata({ uniqueItems: true }),
  v.description('The event types the endpoint receives, each once. `webhook.test` needs no subscription: it goes to the endpoint it is sent to.'),
);

const Description = v.pipe(TrimmedText(1, 500), v.description('What the endpoint is for, shown to admins.'));

export const NewWebhookRequest = v.object({
  url: WebhookUrl,
  events: Events,
  description: v.optional(Description),
});

export const WebhookChangesRequest = v.object({
  url: v.optional(WebhookUrl),
  events: v.optional(Events),
  description: v.optional(v.nullable(Description)),
  enabled: v.optional(
    v.pipe(
      v.boolean('Must be true or false.'),
      v.description('false stops deliveries: new events are not sent to it, and its pending deliveries end as `failed`. true resumes with the next event.'),
    ),
  ),
});

export const Webhook = v.strictObject({
  id: v.string(),
  url: v.string(),
  events: v.array(EventTypeName),
  description: v.optional(v.string()),
  enabled: v.boolean(),
  disabledReason: v.optional(v.pipe(v.string(), v.description('Set when the service disabled the endpoint (it answered 410 Gone); cleared when it is enabled again.'))),
  previousSecretExpiresAt: v.optional(
    v.pipe(Timestamp, v.description('After a rotation: until then each delivery carries a second signature, made with the secret before it.')),
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const WebhookWithSecret = v.strictObject({
  ...Webhook.entries,
  secret: v.pipe(
    v.string(),
    v.regex(/^whsec_[A-Za-z0-9+/]{43}=$/),
    v.description('The signing secret, `whsec_` and the base64 of 32 random bytes. Shown by this answer only: store it now.'),
  ),
});

export const WebhookList = v.array(Webhook);

export const Delivery = v.strictObject({
  id: v.string(),
  eventId: v.pipe(v.string(), v.description('The event, sent as the `webhook-id` header: the same on every attempt, and for every endpoint that receives it.')),
  type: v.picklist([...EVENT_TYPES, 'webhook.test']),
  attempt: v.pipe(Counter, v.description('Attempts made so far: 0 before the first.')),
  status: v.pipe(
    v.picklist(DELIVERY_STATUSES),
    v.description('`pending` until an attempt gets a 2xx answer (`succeeded`) or the last retry fails (`failed`); a 410 answer, or disabling the endpoint, fails it at once.'),
  ),
  responseStatus: v.optional(v.pipe(v.number(), v.integer(), v.description('The status of the last answer, when one came.'))),
  error: v.optional(v.pipe(v.string(), v.description('Why the last attempt failed: the status and the start of the answer, a timeout, a refused connection.'))),
  createdAt: Timestamp,
  nextAttemptAt: v.optional(v.pipe(Timestamp, v.description('While pending: when the next attempt is due.'))),
});

export const DeliveryListQuery = v.object({ page: PositiveParam(MAX_COUNTER, 1), limit: PositiveParam(200, 50) });

export const DeliveryPage = Page(Delivery);

/** Who made a change: the user's id, and their full name when the user is known. */
const Actor = v.strictObject({ id: v.string(), fullName: v.optional(v.string()) });

/** Returns the schema of an event's body: its type, when it happened, and its data. */
const eventBody = <T extends string, D extends v.GenericSchema>(type: T, data: D) =>
  v.strictObject({ type: v.literal(type), timestamp: v.pipe(Timestamp, v.description('When the change happened (not when this attempt was sent).')), data });

export const CampaignStatusChangedEvent = eventBody(
  'campaign.status_changed',
  v.strictObject({
    campaign: v.pipe(Campaign, v.description('The campaign after the move, as GET /v1/campaigns/{id} shows it.')),
    from: CampaignStatus,
    to: CampaignStatus,
    by: v.pipe(Actor, v.description('The user who moved it.')),
    note: v.optional(v.pipe(v.string(), v.description('The note sent with the move, when there was one.'))),
  }),
);

export const CampaignApprovedEvent = eventBody(
  'campaign.approved',
  v.strictObject({
    campaign: Campaign,
    audience: v.pipe(v.omit(CampaignAudience, ['sizeNow']), v.description('The audience frozen at approval, as GET /v1/campaigns/{id}/audience shows it (without `sizeNow`).')),
    exportUrl: v.pipe(
      v.string(),
      v.metadata({ format: 'uri' }),
      v.description('The absolute URL of the audience CSV (GET /v1/campaigns/{id}/audience.csv, bearer token needed), on PUBLIC_URL or the listening address.'),
    ),
  }),
);

export const ImportCompletedEvent = eventBody('customers.import_completed', v.pipe(ImportJob, v.description('The job as GET /v1/customers/imports/{id} shows it: `completed`, or `failed`.')));

export const WebhookTestEvent = eventBody('webhook.test', v.strictObject({ webhookId: v.string(), by: v.pipe(Actor, v.description('The admin who sent it.')) }));

/** Every event, when it is sent and its body: the `webhooks` of the machine description. */
export const WEBHOOK_EVENTS = [
  { type: 'campaign.status_changed', name: 'CampaignStatusChangedEvent', body: CampaignStatusChangedEvent, summary: 'A campaign moved through review: sent on every move, in the transaction of the move.' },
  { type: 'campaign.approved', name: 'CampaignApprovedEvent', body: CampaignApprovedEvent, summary: 'A campaign was approved: its frozen audience and where to download it; written with the status_changed of the same move (events may arrive in any order).' },
  { type: 'customers.import_completed', name: 'ImportCompletedEvent', body: ImportCompletedEvent, summary: 'A CSV import job ended, completed or failed (a job cut by a restart ends `interrupted` and sends nothing).' },
  { type: 'webhook.test', name: 'WebhookTestEvent', body: WebhookTestEvent, summary: 'An admin asked for a test send (POST /v1/webhooks/{id}/test): to that endpoint only, subscribed or not.' },
] as const;
