// The `webhooks` of the OpenAPI document: the POST the service sends for each event type, its headers and body.
import type * as v from 'valibot';
import { WEBHOOK_EVENTS } from '../schemas/webhooks.ts';
import { USER_AGENT } from '../domain/webhooks.ts';

type JsonSchema = Record<string, unknown>;

/** The event bodies, published in `components.schemas` under their names. */
export const WEBHOOK_SCHEMAS: Record<string, v.GenericSchema> = Object.fromEntries(WEBHOOK_EVENTS.map((event) => [event.name, event.body]));

const HEADERS = [
  { name: 'webhook-id', description: 'The event id: the same on every retry and for every endpoint; deduplicate on it.', schema: { type: 'string' } },
  { name: 'webhook-timestamp', description: 'Unix seconds when this attempt was sent; reject values far from your clock.', schema: { type: 'string', pattern: '^\\d+$' } },
  {
    name: 'webhook-signature',
    description:
      '`v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded part of the secret after `whsec_`. ' +
      'For 24 hours after a rotation two signatures, space-separated, the new secret\'s first: accept the request if either matches.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)?$' },
  },
  { name: 'user-agent', description: 'Names the service.', schema: { type: 'string', const: USER_AGENT } },
];

const DELIVERY =
  'Sent as a POST with `Content-Type: application/json` to every enabled endpoint subscribed to the type. Redirects are not followed. ' +
  'Any other answer than a 2xx within 10 s (WEBHOOK_TIMEOUT_MS) is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (WEBHOOK_RETRY_SCHEDULE), ' +
  'then the delivery is `failed`; a 410 disables the endpoint. Delivery is at least once: deduplicate on `webhook-id`.';

/** Returns the `webhooks` object: one POST per event type. */
export function webhookDescriptions(): JsonSchema {
  return Object.fromEntries(
    WEBHOOK_EVENTS.map(({ type, name, summary }) => [
      type,
      {
        post: {
          operationId: `webhookEvents.${name.replace(/Event$/, '').replace(/^./, (c) => c.toLowerCase())}`,
          summary: `${type}: ${summary}`,
          description: DELIVERY,
          tags: ['webhooks'],
          security: [],
          parameters: HEADERS.map((header) => ({ ...header, in: 'header', required: true })),
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } } },
          responses: {
            '200': { description: 'Any 2xx answer within the timeout acknowledges the delivery; its body is not read beyond a few KB.' },
            '410': { description: 'Gone: the service disables the endpoint and sends it nothing more until an admin enables it.' },
          },
        },
      },
    ]),
  );
}
