// @ts-check
// Webhooks (admins only): the endpoints other tools gave to hear about campaigns and imports; create one (its secret
// shown once), switch it on or off, delete it, or open it for its deliveries.
import * as api from '../endpoints.js';
import { emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, formError, notify, openDialog, submitForm } from '../forms.js';
import { dateTime } from '../format.js';
import { describe, errorBox } from '../problems.js';
import { navigate } from '../router.js';
import { onEventsField, secretDialog, webhookFields } from './webhook-parts.js';

/** @typedef {import('../types.js').Webhook} Webhook */

/** @type {import('../types.js').Screen} */
export function webhooksScreen(root, { signal }) {
  document.title = 'Webhooks · Campaign console';
  const list = h('div', {}, loading('Loading webhooks…'));
  const create = h('button', { type: 'button', class: 'button' }, 'New webhook');
  create.addEventListener('click', async () => {
    const webhook = await newWebhookDialog();
    if (!webhook) return;
    await secretDialog('Webhook created: its signing secret', webhook.secret);
    notify('Webhook created. Send it a test to check the receiving end.');
    navigate(webhookPath(webhook));
  });
  root.append(pageHeader('Webhooks', 'Other tools told when campaigns move and imports finish, each delivery signed with the endpoint’s secret.', create), list);

  const load = async () => {
    try {
      const webhooks = await api.webhooks.list({ signal });
      replace(list, webhooks.length ? table(webhooks) : emptyState('No webhooks yet', 'Add the URL of a tool that should hear when a campaign is approved or an import finishes.'));
    } catch (error) {
      replace(list, errorBox(error));
    }
  };

  /** @param {Webhook[]} webhooks */
  const table = (webhooks) =>
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data' },
        h('caption', { class: 'visually-hidden' }, 'Webhooks'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Endpoint'), h('th', { scope: 'col' }, 'Events'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Since'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
        h('tbody', {}, webhooks.map(row)),
      ),
    );

  /** @param {Webhook} webhook */
  const row = (webhook) => {
    const toggle = h('button', { type: 'button', class: 'link-button' }, webhook.enabled ? 'Disable' : 'Enable', h('span', { class: 'visually-hidden' }, ` ${webhook.url}`));
    toggle.addEventListener('click', async () => {
      toggle.disabled = true;
      if (await setEnabled(webhook, !webhook.enabled)) void load();
      toggle.disabled = false;
    });
    const remove = h('button', { type: 'button', class: 'link-button danger' }, 'Delete', h('span', { class: 'visually-hidden' }, ` ${webhook.url}`));
    remove.addEventListener('click', async () => {
      if (await deleteWebhook(webhook)) void load();
    });
    return h(
      'tr',
      { class: webhook.enabled ? '' : 'inactive-row' },
      h('td', {}, h('a', { href: webhookPath(webhook), class: 'strong webhook-url' }, webhook.url), webhook.description ? h('span', { class: 'muted small block' }, webhook.description) : null),
      h('td', { 'data-label': 'Events' }, h('ul', { class: 'chips' }, webhook.events.map((event) => h('li', { class: 'chip' }, event)))),
      h('td', { 'data-label': 'Status' }, enabledBadge(webhook), webhook.disabledReason ? h('span', { class: 'muted small block' }, webhook.disabledReason) : null),
      h('td', { 'data-label': 'Since' }, dateTime(webhook.createdAt)),
      h('td', { class: 'row-actions' }, h('a', { href: webhookPath(webhook), class: 'link-button' }, 'Deliveries', h('span', { class: 'visually-hidden' }, ` of ${webhook.url}`)), toggle, remove),
    );
  };

  void load();
}

/** @param {Webhook} webhook */
export const webhookPath = (webhook) => `/webhooks/${encodeURIComponent(webhook.id)}`;

/** @param {Webhook} webhook */
export function enabledBadge(webhook) {
  return h('span', { class: `badge ${webhook.enabled ? 'status-active' : 'status-inactive'}`, 'data-enabled': String(webhook.enabled) }, webhook.enabled ? 'Enabled' : 'Disabled');
}

/**
 * Switches deliveries to the endpoint on or off; resolves true once done (a failure is said in a notice).
 * @param {Webhook} webhook
 * @param {boolean} enabled
 */
export async function setEnabled(webhook, enabled) {
  try {
    await api.webhooks.update(webhook.id, { enabled });
    notify(enabled ? `Deliveries to ${webhook.url} are on again.` : `Deliveries to ${webhook.url} are paused.`);
    return true;
  } catch (error) {
    notify(describe(error));
    return false;
  }
}

/**
 * Deletes the endpoint once confirmed; resolves true once deleted.
 * @param {Webhook} webhook
 */
export async function deleteWebhook(webhook) {
  const sure = await confirmAction({ title: 'Delete webhook', text: `Stop telling ${webhook.url} about anything, and forget its deliveries? This cannot be undone.`, confirm: 'Delete', danger: true });
  if (!sure) return false;
  try {
    await api.webhooks.remove(webhook.id);
    notify(`Webhook for ${webhook.url} deleted.`);
    return true;
  } catch (error) {
    notify(describe(error));
    return false;
  }
}

/** @returns {Promise<import('../types.js').WebhookWithSecret | undefined>} */
function newWebhookDialog() {
  return openDialog('New webhook', (close) => {
    const fields = webhookFields();
    const save = h('button', { type: 'submit', class: 'button' }, 'Create webhook');
    const form = h(
      'form',
      { class: 'stack wide-dialog', novalidate: true },
      formError(),
      fields.elements,
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'button secondary', onclick: () => close() }, 'Cancel'), save),
    );
    submitForm(
      form,
      save,
      async () => {
        const { url, events, description } = fields.read();
        close(await api.webhooks.create({ url, events, ...(description ? { description } : {}) }));
      },
      onEventsField,
    );
    queueMicrotask(() => fields.focus());
    return form;
  });
}
