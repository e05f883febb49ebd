// The API's shapes as the console sees them, taken from the service's own schemas: when a response changes shape,
// `tsc` fails on the console code that reads it; and the few types of page building. Type-checking only; never served.
import type * as v from 'valibot';
import type * as campaigns from '../../schemas/campaigns.ts';
import type * as chat from '../../schemas/chat.ts';
import type * as customers from '../../schemas/customers.ts';
import type * as exports from '../../schemas/exports.ts';
import type * as imports from '../../schemas/imports.ts';
import type * as segments from '../../schemas/segments.ts';
import type * as users from '../../schemas/users.ts';
import type * as webhooks from '../../schemas/webhooks.ts';

export type User = v.InferOutput<typeof users.User>;
export type Role = User['role'];
export type Session = v.InferOutput<typeof users.Session>;
export type NewUser = v.InferInput<typeof users.NewUserRequest>;
export type UserChanges = v.InferInput<typeof users.UserChangesRequest>;

export type Customer = v.InferOutput<typeof customers.Customer>;
export type CustomerStatus = Customer['status'];
export type CustomerPage = v.InferOutput<typeof customers.CustomerPage>;
export type CustomerQuery = v.InferInput<typeof customers.CustomerListQuery>;
/** A customer as the console sends it; numbers may be anything a person typed, which the service then judges. */
export type CustomerInput = Omit<Customer, 'id' | 'totalTransactions' | 'totalAmountSpent'> & {
  totalTransactions: number | string | null;
  totalAmountSpent: number | string | null;
};
export type ImportReport = v.InferOutput<typeof customers.ImportReport>;
export type ImportJob = v.InferOutput<typeof imports.ImportJob>;
export type ImportPreview = v.InferOutput<typeof imports.ImportPreview>;
export type Kpis = v.InferOutput<typeof customers.Kpis>;
export type TrendPoint = v.InferOutput<typeof customers.Trend>[number];
export type Health = v.InferOutput<typeof customers.Health>;
export type TopCustomers = v.InferOutput<typeof customers.TopCustomers>;

export type Segment = v.InferOutput<typeof segments.Segment>;
export type Condition = v.InferInput<typeof segments.SegmentCondition>;
export type ConditionField = Condition['field'];
export type Preview = v.InferOutput<typeof segments.Preview>;
export type SegmentDraft = v.InferOutput<typeof segments.SegmentDraft>;

export type Campaign = v.InferOutput<typeof campaigns.Campaign>;
export type CampaignStatus = Campaign['status'];
export type Channel = Campaign['channel'];
export type Tone = Campaign['tone'];
export type CampaignPage = v.InferOutput<typeof campaigns.CampaignPage>;
export type CampaignEvent = v.InferOutput<typeof campaigns.CampaignEventList>[number];
export type GenerateRequest = v.InferInput<typeof campaigns.GenerateRequest>;
export type CampaignQuery = v.InferInput<typeof campaigns.CampaignListQuery>;
export type CampaignCopy = Pick<Campaign, 'title' | 'message' | 'callToAction'>;
export type CampaignAudience = v.InferOutput<typeof campaigns.CampaignAudience>;
export type CampaignVersion = v.InferOutput<typeof campaigns.CampaignVersion>;
export type VersionSource = CampaignVersion['source'];
export type VariantsRequest = v.InferInput<typeof campaigns.VariantsRequest>;
export type VariantList = v.InferOutput<typeof campaigns.VariantList>;
export type ExportFormat = exports.ExportFormat;

export type Webhook = v.InferOutput<typeof webhooks.Webhook>;
export type WebhookEvent = Webhook['events'][number];
export type WebhookWithSecret = v.InferOutput<typeof webhooks.WebhookWithSecret>;
export type NewWebhook = v.InferInput<typeof webhooks.NewWebhookRequest>;
export type WebhookChanges = v.InferInput<typeof webhooks.WebhookChangesRequest>;
export type Delivery = v.InferOutput<typeof webhooks.Delivery>;
export type DeliveryPage = v.InferOutput<typeof webhooks.DeliveryPage>;

export type Thread = v.InferOutput<typeof chat.Thread>;
export type ThreadPage = v.InferOutput<typeof chat.ThreadPage>;
export type Message = v.InferOutput<typeof chat.Message>;
/** A proposal of the assistant (save a segment, draft a campaign) and what became of it. */
export type ChatAction = v.InferOutput<typeof chat.ChatAction>;
export type ConfirmReply = v.InferOutput<typeof chat.ConfirmReply>;
export type RejectReply = v.InferOutput<typeof chat.RejectReply>;
/** One `data:` frame of a streamed reply: start, delta, action, done or error. */
export type StreamEvent = v.InferOutput<typeof chat.StreamEvent>;

/** A field error of a `validation_failed` problem. */
export interface FieldError {
  field: string;
  message: string;
}

/** An RFC 9457 problem document as the service sends it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  traceId: string;
  errors?: FieldError[];
}

/** What element builders accept as children: text, nodes, nested lists; empty values are skipped. */
export type Child = Node | string | number | null | undefined | false | Child[];

/** Where the console is: path and query. */
export interface Place {
  path: string;
  query: URLSearchParams;
}

/** What a screen is given: path parameters, the query, and a signal aborted when the screen is left. */
export interface ScreenContext {
  params: Record<string, string>;
  query: URLSearchParams;
  signal: AbortSignal;
}

/**
 * A screen draws itself into `root`. One that returns `update` takes later places of its own route in place
 * (filters, pages, another thread) instead of being rebuilt.
 */
export type Screen = (root: HTMLElement, context: ScreenContext) => void | { update(place: Place, params: Record<string, string>): void };
