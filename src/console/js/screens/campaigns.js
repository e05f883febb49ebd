// @ts-check
// Campaigns: the list, newest first, filtered by status, channel and segment (kept in the URL), in pages.
import * as api from '../endpoints.js';
import { emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { field, select } from '../forms.js';
import { CAMPAIGN_STATUS_NAMES, CHANNEL_NAMES, count, dateTime } from '../format.js';
import { errorBox } from '../problems.js';
import { navigate, urlFor } from '../router.js';

const PAGE_SIZE = 20;

/** @typedef {{ status: string, channel: string, segmentId: string, page: number }} Filters */

/** @param {URLSearchParams} query @returns {Filters} */
function filtersOf(query) {
  const status = query.get('status') ?? '';
  const channel = query.get('channel') ?? '';
  const page = Number(query.get('page'));
  return {
    status: status in CAMPAIGN_STATUS_NAMES ? status : '',
    channel: channel in CHANNEL_NAMES ? channel : '',
    segmentId: query.get('segmentId') ?? '',
    page: Number.isSafeInteger(page) && page > 0 ? page : 1,
  };
}

/** @param {Filters} f */
const urlOf = (f) => urlFor('/campaigns', { status: f.status, channel: f.channel, segmentId: f.segmentId, page: f.page === 1 ? undefined : f.page });

/** @type {import('../types.js').Screen} */
export function campaignsScreen(root, { query, signal }) {
  document.title = 'Campaigns · Campaign console';
  let filters = filtersOf(query);
  const status = select({ name: 'status' }, [['', 'Any status'], ...Object.entries(CAMPAIGN_STATUS_NAMES)], filters.status);
  const channel = select({ name: 'channel' }, [['', 'Any channel'], ...Object.entries(CHANNEL_NAMES)], filters.channel);
  const segment = select({ name: 'segmentId' }, [['', 'Any segment']], filters.segmentId);
  const results = h('div', {}, loading('Loading campaigns…'));
  const refine = () => navigate(urlOf({ status: status.value, channel: channel.value, segmentId: segment.value, page: 1 }));
  for (const control of [status, channel, segment]) control.addEventListener('change', refine);

  root.append(
    pageHeader('Campaigns', 'Drafted by the model for a segment, then reviewed before sending.', h('a', { href: '/campaigns/new', class: 'button' }, 'New campaign')),
    h('form', { class: 'toolbar thirds', 'aria-label': 'Filter campaigns', onsubmit: (/** @type {Event} */ e) => e.preventDefault() }, field({ label: 'Status', control: status }), field({ label: 'Channel', control: channel }), field({ label: 'Segment', control: segment })),
    results,
  );

  void api.segments.list({ signal }).then(
    (segments) => {
      for (const s of segments) segment.append(h('option', { value: s.id, selected: s.id === filters.segmentId }, s.name));
    },
    () => {},
  );

  /** @type {AbortController | undefined} */
  let inFlight;
  const load = async () => {
    inFlight?.abort();
    inFlight = new AbortController();
    const stop = AbortSignal.any([signal, inFlight.signal]);
    results.setAttribute('aria-busy', 'true');
    try {
      const page = await api.campaigns.list(
        { status: /** @type {never} */ (filters.status || undefined), channel: /** @type {never} */ (filters.channel || undefined), segmentId: filters.segmentId || undefined, page: filters.page, limit: PAGE_SIZE },
        { signal: stop },
      );
      replace(results, page.items.length ? list(page) : empty(), pager(page.total));
    } catch (error) {
      if (!stop.aborted) replace(results, errorBox(error));
    } finally {
      if (!stop.aborted) results.removeAttribute('aria-busy');
    }
  };

  const empty = () =>
    filters.status || filters.channel || filters.segmentId
      ? emptyState('No campaigns match', 'Try another status, channel or segment.', h('a', { href: '/campaigns', class: 'button secondary' }, 'Clear filters'))
      : emptyState('No campaigns yet', 'Pick a segment and an objective; the model drafts the copy for you to review.', h('a', { href: '/campaigns/new', class: 'button' }, 'New campaign'));

  /** @param {import('../types.js').CampaignPage} page */
  const list = (page) =>
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data' },
        h('caption', { class: 'visually-hidden' }, `Campaigns, ${count(page.total)} in all`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Campaign'), h('th', { scope: 'col' }, 'Segment'), h('th', { scope: 'col' }, 'Channel'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Updated'))),
        h(
          'tbody',
          {},
          page.items.map((c) =>
            h(
              'tr',
              {},
              h('td', {}, h('a', { href: `/campaigns/${encodeURIComponent(c.id)}`, class: 'strong' }, c.title), h('span', { class: 'muted small block' }, c.objective)),
              h('td', { 'data-label': 'Segment' }, c.segmentName),
              h('td', { 'data-label': 'Channel' }, CHANNEL_NAMES[c.channel]),
              h('td', { 'data-label': 'Status' }, h('span', { class: `badge campaign-${c.status}` }, CAMPAIGN_STATUS_NAMES[c.status])),
              h('td', { 'data-label': 'Updated' }, dateTime(c.updatedAt)),
            ),
          ),
        ),
      ),
    );

  /** @param {number} total */
  const pager = (total) => {
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    if (pages <= 1) return null;
    const link = (/** @type {number} */ page, /** @type {string} */ label, /** @type {boolean} */ enabled) =>
      enabled ? h('a', { href: urlOf({ ...filters, page }), class: 'button secondary small' }, label) : h('span', { class: 'button secondary small', 'aria-disabled': 'true' }, label);
    return h('nav', { class: 'pager', 'aria-label': 'Pages' }, link(filters.page - 1, 'Previous', filters.page > 1), h('span', { class: 'muted' }, `Page ${filters.page} of ${pages}`), link(filters.page + 1, 'Next', filters.page < pages));
  };

  void load();
  return {
    update(place) {
      filters = filtersOf(place.query);
      status.value = filters.status;
      channel.value = filters.channel;
      segment.value = filters.segmentId;
      void load();
    },
  };
}
