// Webhooks: the event types an endpoint can receive, and the states of a delivery (product.md section 10).

/** Event types an endpoint subscribes to; `webhook.test` is sent on request to one endpoint and needs no subscription. */
export const EVENT_TYPES = ['campaign.status_changed', 'campaign.approved', 'customers.import_completed'] as const;
export type EventType = (typeof EVENT_TYPES)[number] | 'webhook.test';

/** A delivery is pending until an attempt succeeds or the last one fails. */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The User-Agent of every delivery: it names the service. */
export const USER_AGENT = 'campaign-drafting-service-webhooks/1.0';

/** How long the secret before a rotation keeps signing beside the new one. */
export const PREVIOUS_SECRET_MS = 24 * 3_600_000;
