// @ts-check
// What the two webhook screens share: the events in words, the fields of a webhook (create and edit), the dialog
// that shows a signing secret the one time the service gives it, and the delivery statuses.
import { ApiError } from '../api.js';
import { copyButton } from '../clipboard.js';
import { h, uid } from '../dom.js';
import { field, openDialog } from '../forms.js';

/** @typedef {import('../types.js').Webhook} Webhook */
/** @typedef {import('../types.js').WebhookEvent} WebhookEvent */

/** The events an endpoint can subscribe to, with what they mean (product.md section 10). */
export const EVENT_NAMES = /** @type {const} */ ({
  'campaign.status_changed': 'A campaign moves: submitted, approved, sent back, sent or reopened',
  'campaign.approved': 'A campaign is approved, with its frozen audience and the link to export it',
  'customers.import_completed': 'A customer import finishes',
});

export const DELIVERY_STATUS_NAMES = /** @type {const} */ ({ pending: 'Pending', succeeded: 'Succeeded', failed: 'Failed' });

/**
 * The URL, event and description fields, filled from `initial`; `read` returns what they hold.
 * @param {Partial<Webhook>} [initial]
 */
export function webhookFields(initial = {}) {
  const url = h('input', { name: 'url', type: 'url', required: true, value: initial.url ?? '', placeholder: 'https://tools.example.com/hooks/campaigns', autocomplete: 'off', spellcheck: 'false' });
  const description = h('input', { name: 'description', maxlength: '200', value: initial.description ?? '', placeholder: 'e.g. Sends approved campaigns to listmonk' });
  const errorId = uid('events-error');
  const boxes = Object.keys(EVENT_NAMES).map((value) =>
    h('input', { type: 'checkbox', name: 'events', value, checked: initial.events ? initial.events.includes(/** @type {WebhookEvent} */ (value)) : true }),
  );
  const events = h(
    'fieldset',
    { class: 'event-choices', 'data-field': 'events', 'data-error-slot': errorId },
    h('legend', {}, 'Events'),
    boxes.map((box) => h('label', { class: 'choice' }, box, h('span', {}, h('code', {}, box.value), h('span', { class: 'muted small block' }, EVENT_NAMES[/** @type {keyof typeof EVENT_NAMES} */ (box.value)])))),
    h('p', { class: 'field-error', id: errorId, hidden: true }),
  );
  return {
    elements: [
      field({ label: 'Endpoint URL', control: url, hint: 'http or https, without a user name or password in it. Redirects are not followed.' }),
      events,
      field({ label: 'Description (optional)', control: description }),
    ],
    read: () => ({
      url: url.value.trim(),
      events: boxes.filter((box) => box.checked).map((box) => /** @type {WebhookEvent} */ (box.value)),
      description: description.value.trim(),
    }),
    focus: () => url.focus(),
  };
}

/**
 * Returns the error with the errors of single events (`events.1`) placed on the events fieldset.
 * @param {unknown} error
 */
export function onEventsField(error) {
  if (!(error instanceof ApiError)) return error;
  return new ApiError({ ...error, errors: error.errors.map((e) => (/^events\.\d+$/.test(e.field) ? { ...e, field: 'events' } : e)) });
}

/**
 * Shows a signing secret the one time the service gives it, with a Copy button; resolves when closed.
 * @param {string} title
 * @param {string} secret
 * @param {string} [note] what else to know, e.g. how long the old secret still signs
 */
export async function secretDialog(title, secret, note) {
  await openDialog(title, (close) => {
    const value = h('input', { class: 'secret-value', readOnly: true, value: secret, spellcheck: 'false', autocomplete: 'off' });
    const done = h('button', { type: 'button', class: 'button', onclick: () => close() }, 'I have stored it');
    queueMicrotask(() => value.select());
    return h(
      'div',
      { class: 'stack wide-dialog' },
      h('div', { class: 'alert warning', role: 'alert' }, h('p', { class: 'strong' }, 'Copy this secret now: you will not see it again.'), h('p', {}, 'Store it where the receiving tool checks the webhook-signature header. If it is lost, rotate the secret to get a new one.')),
      field({ label: 'Signing secret', control: value }),
      h('div', {}, copyButton({ text: () => secret, name: 'signing secret', source: value })),
      note ? h('p', { class: 'muted' }, note) : null,
      h('div', { class: 'dialog-actions' }, done),
    );
  });
}
