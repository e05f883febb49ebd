// webhooks.*: endpoints that receive signed events, their secrets, test sends and delivery logs (admins only).
import type { Clock } from '../domain/clock.ts';
import { operation } from '../http/operation.ts';
import { IdParams, NullBody } from '../schemas/common.ts';
import { Delivery, DeliveryListQuery, DeliveryPage, NewWebhookRequest, Webhook, WebhookChangesRequest, WebhookList, WebhookWithSecret } from '../schemas/webhooks.ts';
import type { Webhooks } from '../webhooks/index.ts';

const SIGNING =
  'Deliveries follow Standard Webhooks: a POST of `{ type, timestamp, data }` with `webhook-id`, `webhook-timestamp` and ' +
  '`webhook-signature` (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the base64-decoded part of the secret after `whsec_`).';

/** Returns the webhook operations. */
export function webhookOperations({ webhooks, clock }: { webhooks: Webhooks; clock: Clock }) {
  const { endpoints, deliveries } = webhooks;

  const create = operation({
    operationId: 'webhooks.create',
    summary: 'Register an endpoint for events; the answer shows its signing secret, once.',
    description: SIGNING,
    tag: 'webhooks',
    body: NewWebhookRequest,
    response: WebhookWithSecret,
    handle({ body }) {
      return webhooks.createWebhook({ url: body.url, events: body.events, description: body.description }, clock());
    },
  });

  const list = operation({
    operationId: 'webhooks.list',
    summary: 'Every endpoint, oldest first, without secrets.',
    tag: 'webhooks',
    response: WebhookList,
    handle() {
      return endpoints.listWebhooks();
    },
  });

  const get = operation({
    operationId: 'webhooks.get',
    summary: 'One endpoint, without its secret.',
    tag: 'webhooks',
    params: IdParams,
    response: Webhook,
    problems: ['not_found'],
    handle({ params }) {
      return endpoints.getWebhook(params.id);
    },
  });

  const update = operation({
    operationId: 'webhooks.update',
    summary: "Change an endpoint's URL, events or description, or switch it off and on with `enabled`.",
    description: 'Pending deliveries go to the new URL. Disabling ends its pending deliveries as `failed`; enabling clears `disabledReason`.',
    tag: 'webhooks',
    params: IdParams,
    body: WebhookChangesRequest,
    response: Webhook,
    problems: ['not_found'],
    handle({ params, body }) {
      return endpoints.updateWebhook(params.id, body, clock());
    },
  });

  const remove = operation({
    operationId: 'webhooks.delete',
    summary: 'Delete an endpoint with its delivery log; its pending deliveries are not sent.',
    tag: 'webhooks',
    params: IdParams,
    response: NullBody,
    problems: ['not_found'],
    async handle({ params }) {
      await endpoints.deleteWebhook(params.id);
      return null;
    },
  });

  const rotateSecret = operation({
    operationId: 'webhooks.rotateSecret',
    summary: 'Give an endpoint a new signing secret, shown by this answer only; for 24 hours deliveries carry both signatures.',
    description:
      'The `webhook-signature` header then holds two space-separated signatures, the new secret\'s first, so receivers can switch without losing a delivery. ' +
      'Rotating again within the 24 hours drops the oldest secret.',
    tag: 'webhooks',
    params: IdParams,
    response: WebhookWithSecret,
    problems: ['not_found'],
    handle({ params }) {
      return webhooks.rotateSecret(params.id, clock());
    },
  });

  const test = operation({
    operationId: 'webhooks.test',
    summary: 'Send a `webhook.test` event to this endpoint alone, and answer with its delivery after the first attempt.',
    description:
      'Waits for the endpoint (at most the attempt timeout, 10 s by default): the delivery is `succeeded`, or `pending` with the answer or error ' +
      'and the time of the retry, or `failed` after a 410. It is in the delivery log like any other.',
    tag: 'webhooks',
    params: IdParams,
    response: Delivery,
    problems: ['not_found', 'conflict'],
    handle({ params, user }) {
      return webhooks.sendTest(params.id, user.id, clock());
    },
  });

  const listDeliveries = operation({
    operationId: 'webhooks.deliveries',
    summary: "An endpoint's deliveries, newest first, in pages: one per event, with its attempts so far and the outcome of the last.",
    tag: 'webhooks',
    params: IdParams,
    query: DeliveryListQuery,
    response: DeliveryPage,
    problems: ['not_found'],
    async handle({ params, query }) {
      const seq = await endpoints.seqOf(params.id);
      return { ...(await deliveries.listDeliveries(seq, query.page, query.limit)), page: query.page, limit: query.limit };
    },
  });

  return { create, list, get, update, remove, rotateSecret, test, listDeliveries };
}
