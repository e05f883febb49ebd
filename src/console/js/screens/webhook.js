// @ts-check
// One webhook (admins only): its deliveries, newest first, refreshed on their own while one is pending; a test
// event, a new secret (shown once), switching it off and on, editing and deleting it.
import * as api from '../endpoints.js';
import { isAbort } from '../api.js';
import { emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, formError, notify, submitForm } from '../forms.js';
import { count, dateTime, plural, preciseTime } from '../format.js';
import { errorBox } from '../problems.js';
import { navigate, urlFor } from '../router.js';
import { DELIVERY_STATUS_NAMES, onEventsField, secretDialog, webhookFields } from './webhook-parts.js';
import { deleteWebhook, enabledBadge, setEnabled, webhookPath } from './webhooks.js';

/** @typedef {import('../types.js').Webhook} Webhook */
/** @typedef {import('../types.js').Delivery} Delivery */

const PAGE_SIZE = 20;
/** How soon to look again while a delivery is pending: soon for one under way, at most this long for a later retry. */
const REFRESH_MS = { soonest: 2000, latest: 30_000 };

/** @param {URLSearchParams} query */
const pageOf = (query) => Math.max(1, Math.floor(Number(query.get('page'))) || 1);

/** @type {import('../types.js').Screen} */
export function webhookScreen(root, { params, query, signal }) {
  document.title = 'Webhook · Campaign console';
  const id = /** @type {string} */ (params.id);
  let page = pageOf(query);
  /** @type {Webhook} */
  let webhook;
  root.append(loading('Loading the webhook…'));

  const problem = h('div', {});
  const deliveries = h('div', {}, loading('Loading deliveries…'));
  const updated = h('p', { class: 'muted small' });
  const refresh = h('button', { type: 'button', class: 'button secondary small' }, 'Refresh');
  refresh.addEventListener('click', () => void loadDeliveries());
  const deliveriesCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'deliveries-title' },
    h('div', { class: 'card-head' }, h('h2', { id: 'deliveries-title' }, 'Deliveries'), refresh),
    updated,
    deliveries,
  );

  /** Shows a failed action's problem under the heading, or clears it. @param {unknown} [error] */
  const said = (error) => replace(problem, error === undefined ? null : errorBox(error));

  const draw = () => {
    document.title = `Webhook ${webhook.url} · Campaign console`;
    const test = h('button', { type: 'button', class: 'button' }, 'Send a test');
    test.addEventListener('click', async () => {
      // The service answers after the first attempt, which may wait for a slow endpoint (up to its timeout).
      test.disabled = true;
      test.textContent = 'Sending a test…';
      try {
        said();
        notify(testOutcome(await api.webhooks.test(webhook.id)));
        if (page === 1) await loadDeliveries();
        else navigate(webhookPath(webhook));
      } catch (error) {
        said(error);
      } finally {
        test.disabled = false;
        test.textContent = 'Send a test';
      }
    });
    const rotate = h('button', { type: 'button', class: 'button secondary' }, 'Rotate secret');
    rotate.addEventListener('click', async () => {
      const sure = await confirmAction({
        title: 'Rotate the signing secret',
        text: 'A new secret signs every delivery from now on. For 24 hours deliveries carry the old signature too, so the receiving tool keeps accepting them while you update it.',
        confirm: 'Rotate secret',
      });
      if (!sure) return;
      try {
        const rotated = await api.webhooks.rotateSecret(webhook.id);
        said();
        const until = rotated.previousSecretExpiresAt ? `until ${dateTime(rotated.previousSecretExpiresAt)}` : 'for the next 24 hours';
        await secretDialog('New signing secret', rotated.secret, `The previous secret still signs deliveries ${until}, beside this one.`);
        await loadWebhook(); // shows until when the previous secret signs too
      } catch (error) {
        said(error);
      }
    });
    const remove = h('button', { type: 'button', class: 'button danger secondary' }, 'Delete');
    remove.addEventListener('click', async () => {
      if (await deleteWebhook(webhook)) navigate('/webhooks');
    });
    replace(
      root,
      h('p', { class: 'small' }, h('a', { href: '/webhooks' }, '← All webhooks')),
      pageHeader(webhook.description || 'Webhook', h('span', {}, enabledBadge(webhook), ' ', h('code', { class: 'webhook-url' }, webhook.url)), test, rotate, remove),
      problem,
      deliveriesCard,
      settingsCard(),
    );
  };

  const settingsCard = () => {
    const toggle = h('button', { type: 'button', class: webhook.enabled ? 'button secondary small' : 'button small' }, webhook.enabled ? 'Disable' : 'Enable');
    toggle.addEventListener('click', async () => {
      toggle.disabled = true;
      if (await setEnabled(webhook, !webhook.enabled)) await loadWebhook();
      toggle.disabled = false;
    });
    const fields = webhookFields(webhook);
    const save = h('button', { type: 'submit', class: 'button' }, 'Save changes');
    const form = h('form', { class: 'stack', novalidate: true }, formError(), fields.elements, h('div', { class: 'form-actions start' }, save));
    submitForm(
      form,
      save,
      async () => {
        const { url, events, description } = fields.read();
        webhook = await api.webhooks.update(webhook.id, { url, events, description: description || null });
        notify('Webhook saved.');
        draw();
      },
      onEventsField,
    );
    return h(
      'section',
      { class: 'card stack narrow', 'aria-labelledby': 'settings-title' },
      h('h2', { id: 'settings-title' }, 'Settings'),
      h(
        'div',
        { class: 'inline-controls enabled-line' },
        h(
          'p',
          {},
          webhook.enabled ? 'Enabled: events are delivered to this URL.' : 'Disabled: nothing is delivered until it is enabled again.',
          webhook.disabledReason ? h('span', { class: 'block muted small' }, `Disabled by the service: ${webhook.disabledReason}`) : null,
        ),
        toggle,
      ),
      webhook.previousSecretExpiresAt
        ? h('p', { class: 'muted small' }, `The secret was rotated: until ${dateTime(webhook.previousSecretExpiresAt)} each delivery also carries the signature of the previous secret.`)
        : null,
      form,
    );
  };

  const loadWebhook = async () => {
    try {
      webhook = await api.webhooks.get(id, { signal });
      draw();
    } catch (error) {
      if (!signal.aborted) replace(root, pageHeader('Webhook'), errorBox(error, h('a', { href: '/webhooks' }, 'Back to webhooks')));
    }
  };

  // The log: each load replaces an older one still under way; a pending delivery brings another look on its own.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {AbortController | undefined} */
  let inFlight;
  const loadDeliveries = async () => {
    clearTimeout(timer);
    inFlight?.abort();
    inFlight = new AbortController();
    const stop = AbortSignal.any([signal, inFlight.signal]);
    deliveries.setAttribute('aria-busy', 'true');
    try {
      const result = await api.webhooks.deliveries(id, { page, limit: PAGE_SIZE }, { signal: stop });
      replace(
        deliveries,
        result.items.length ? deliveryTable(result.items) : emptyState('No deliveries yet', 'Send a test, or wait for a campaign to move or an import to finish.'),
        pager(result.total),
      );
      const wait = nextLook(result.items);
      updated.textContent = `${plural(result.total, 'delivery', 'deliveries')}. Updated at ${preciseTime(new Date().toISOString())}.${wait === null ? '' : ' Refreshing on its own while a delivery is pending.'}`;
      if (wait !== null) timer = setTimeout(() => void loadDeliveries(), wait);
    } catch (error) {
      if (!stop.aborted && !isAbort(error)) replace(deliveries, errorBox(error));
    } finally {
      if (!stop.aborted) deliveries.removeAttribute('aria-busy');
    }
  };
  signal.addEventListener('abort', () => clearTimeout(timer));

  /** @param {number} total */
  const pager = (total) => {
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    if (pages <= 1) return null;
    const link = (/** @type {number} */ to, /** @type {string} */ label, /** @type {boolean} */ enabled) =>
      enabled ? h('a', { href: urlFor(`/webhooks/${encodeURIComponent(id)}`, { page: to > 1 ? to : undefined }), class: 'button secondary small' }, label) : h('span', { class: 'button secondary small', 'aria-disabled': 'true' }, label);
    return h('nav', { class: 'pager', 'aria-label': 'Pages of deliveries' }, link(page - 1, 'Newer', page > 1), h('span', { class: 'muted' }, `Page ${page} of ${pages}`), link(page + 1, 'Older', page < pages));
  };

  void loadWebhook();
  void loadDeliveries();
  return {
    update(place) {
      page = pageOf(place.query);
      void loadDeliveries();
    },
  };
}

/**
 * The test's outcome after its first attempt, in words.
 * @param {Delivery} delivery
 */
function testOutcome(delivery) {
  if (delivery.status === 'succeeded') return `Test delivered: the endpoint answered ${delivery.responseStatus ?? 'with success'}.`;
  const why = delivery.error ? ` ${/[.!?]$/.test(delivery.error) ? delivery.error : `${delivery.error}.`}` : '';
  if (delivery.status === 'failed') return `The test failed.${why}`;
  return `The endpoint did not accept the test.${why}${delivery.nextAttemptAt ? ` It is tried again at ${preciseTime(delivery.nextAttemptAt)}.` : ''}`;
}

/**
 * Milliseconds until the log is worth another look, or null when nothing is pending.
 * @param {Delivery[]} items
 */
function nextLook(items) {
  const pending = items.filter((d) => d.status === 'pending');
  if (!pending.length) return null;
  const soonest = Math.min(...pending.map((d) => (d.nextAttemptAt ? Date.parse(d.nextAttemptAt) - Date.now() + 1000 : 0)));
  return Math.min(REFRESH_MS.latest, Math.max(REFRESH_MS.soonest, soonest));
}

/** @param {Delivery[]} items */
function deliveryTable(items) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data deliveries' },
      h('caption', { class: 'visually-hidden' }, 'Deliveries, newest first'),
      h(
        'thead',
        {},
        h('tr', {}, ['Created', 'Event', 'Status', 'Attempt', 'Response', 'Next attempt'].map((name) => h('th', { scope: 'col', class: name === 'Attempt' ? 'num' : '' }, name))),
      ),
      h(
        'tbody',
        {},
        items.map((d) =>
          h(
            'tr',
            { 'data-delivery': d.id, 'data-status': d.status },
            h('td', {}, h('time', { datetime: d.createdAt }, preciseTime(d.createdAt))),
            h('td', { 'data-label': 'Event' }, h('code', {}, d.type)),
            h('td', { 'data-label': 'Status' }, h('span', { class: `badge delivery-${d.status}` }, DELIVERY_STATUS_NAMES[d.status])),
            h('td', { 'data-label': 'Attempt', class: 'num' }, count(d.attempt)),
            h('td', { 'data-label': 'Response' }, response(d)),
            h('td', { 'data-label': 'Next attempt' }, d.nextAttemptAt ? h('time', { datetime: d.nextAttemptAt }, dateTime(d.nextAttemptAt)) : '–'),
          ),
        ),
      ),
    ),
  );
}

/** The answer to the last attempt: its status, the error that stood for one, or nothing yet. @param {Delivery} d */
function response(d) {
  const parts = [];
  if (d.responseStatus !== undefined && d.responseStatus !== null) parts.push(h('span', { class: 'strong' }, `HTTP ${d.responseStatus}`));
  if (d.error) parts.push(h('span', { class: 'delivery-error block small' }, d.error));
  return parts.length ? parts : h('span', { class: 'muted' }, d.status === 'pending' && d.attempt === 0 ? 'Not tried yet' : '–');
}
