// @ts-check
// Customers: search, filters, sort and paging kept in the URL (so back and forward replay them), with create,
// edit, delete for the roles allowed, and the CSV import.
import * as api from '../endpoints.js';
import { debounce, emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, field, notify, select } from '../forms.js';
import { count, CUSTOMER_STATUS_NAMES, date, money } from '../format.js';
import { describe, errorBox } from '../problems.js';
import { navigate, urlFor } from '../router.js';
import * as session from '../session.js';
import { customerDialog } from './customer-form.js';
import { importDialog } from './customer-import.js';

const PAGE_SIZE = 25;
const SORTS = /** @type {const} */ (['name', 'totalAmountSpent', 'totalTransactions', 'lastActivityDate']);
const STATUSES = /** @type {const} */ (['all', 'active', 'inactive', 'churned']);

/** @typedef {{ search: string, status: typeof STATUSES[number], country: string, sort: typeof SORTS[number], direction: 'asc' | 'desc', page: number }} Filters */

/**
 * Reads the filters from the URL, falling back to the defaults for anything missing or unknown.
 * @param {URLSearchParams} query
 * @returns {Filters}
 */
function filtersOf(query) {
  const pick = (/** @type {string} */ name, /** @type {readonly string[]} */ allowed, /** @type {string} */ fallback) => {
    const value = query.get(name) ?? '';
    return allowed.includes(value) ? value : fallback;
  };
  const page = Number(query.get('page'));
  return {
    search: query.get('search') ?? '',
    status: /** @type {Filters['status']} */ (pick('status', STATUSES, 'all')),
    country: query.get('country') ?? '',
    sort: /** @type {Filters['sort']} */ (pick('sort', SORTS, 'lastActivityDate')),
    direction: /** @type {Filters['direction']} */ (pick('direction', ['asc', 'desc'], 'desc')),
    page: Number.isSafeInteger(page) && page > 0 ? page : 1,
  };
}

/** @param {Partial<Filters>} filters */
function urlOf(filters) {
  return urlFor('/customers', {
    search: filters.search,
    status: filters.status === 'all' ? undefined : filters.status,
    country: filters.country,
    sort: filters.sort === 'lastActivityDate' ? undefined : filters.sort,
    direction: filters.direction === 'desc' ? undefined : filters.direction,
    page: filters.page === 1 ? undefined : filters.page,
  });
}

/** @type {import('../types.js').Screen} */
export function customersScreen(root, { query, signal }) {
  document.title = 'Customers · Campaign console';
  let filters = filtersOf(query);
  const search = h('input', { type: 'search', name: 'search', value: filters.search, placeholder: 'Name or email', autocomplete: 'off' });
  const status = select({ name: 'status' }, STATUSES.map((s) => [s, s === 'all' ? 'All statuses' : CUSTOMER_STATUS_NAMES[s]]), filters.status);
  const country = h('input', { type: 'text', name: 'country', value: filters.country, placeholder: 'Any country', autocomplete: 'off' });
  const results = h('div', { class: 'results' });
  const summary = h('p', { class: 'muted', role: 'status' });

  const refine = () => navigate(urlOf({ ...filters, search: search.value.trim(), status: /** @type {Filters['status']} */ (status.value), country: country.value.trim(), page: 1 }));
  const refineSoon = debounce(refine, 350);
  search.addEventListener('input', refineSoon);
  country.addEventListener('input', refineSoon);
  status.addEventListener('change', refine);
  signal.addEventListener('abort', () => refineSoon.cancel());

  const create = h('button', { type: 'button', class: 'button' }, 'New customer');
  create.addEventListener('click', async () => {
    if (await customerDialog(null)) {
      notify('Customer created.');
      void load();
    }
  });
  const importButton = h('button', { type: 'button', class: 'button secondary' }, 'Import CSV');
  importButton.addEventListener('click', async () => {
    if (await importDialog()) void load();
  });

  root.append(
    pageHeader('Customers', 'Everyone in the customer base, searchable and sortable.', importButton, create),
    h(
      'form',
      { class: 'toolbar', role: 'search', onsubmit: (/** @type {Event} */ e) => (e.preventDefault(), refineSoon.cancel(), refine()) },
      field({ label: 'Search', control: search }),
      field({ label: 'Status', control: status }),
      field({ label: 'Country', control: country }),
    ),
    summary,
    results,
  );

  /** @type {AbortController | undefined} */
  let inFlight;
  let first = true;
  const load = async () => {
    inFlight?.abort();
    inFlight = new AbortController();
    const stop = AbortSignal.any([signal, inFlight.signal]);
    if (first) replace(results, loading('Loading customers…'));
    results.setAttribute('aria-busy', 'true');
    try {
      const page = await api.customers.list({ ...filters, limit: PAGE_SIZE }, { signal: stop });
      first = false;
      replace(results, page.items.length ? table(page.items) : empty(page.total), pager(page.total));
      const from = (filters.page - 1) * PAGE_SIZE + 1;
      summary.textContent = page.total ? `Showing ${count(Math.min(from, page.total))}–${count(Math.min(from + page.items.length - 1, page.total))} of ${count(page.total)} customers` : '';
    } catch (error) {
      if (stop.aborted) return;
      replace(results, errorBox(error, h('button', { type: 'button', class: 'button secondary', onclick: () => void load() }, 'Try again')));
      summary.textContent = '';
    } finally {
      if (!stop.aborted) results.removeAttribute('aria-busy');
    }
  };

  /** @param {import('../types.js').Customer[]} items */
  const table = (items) => {
    const sortHeader = (/** @type {Filters['sort']} */ key, /** @type {string} */ label, numeric = false) => {
      const active = filters.sort === key;
      const next = active ? (filters.direction === 'asc' ? 'desc' : 'asc') : key === 'name' ? 'asc' : 'desc';
      return h(
        'th',
        { scope: 'col', class: numeric ? 'num' : '', 'aria-sort': active ? (filters.direction === 'asc' ? 'ascending' : 'descending') : 'none' },
        h('a', { href: urlOf({ ...filters, sort: key, direction: next, page: 1 }), class: 'sort-link' }, label, h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, active ? (filters.direction === 'asc' ? '▲' : '▼') : '')),
      );
    };
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data sortable' },
        h('caption', { class: 'visually-hidden' }, 'Customers, sortable by the linked column headings'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            sortHeader('name', 'Name'),
            h('th', { scope: 'col' }, 'Country'),
            h('th', { scope: 'col' }, 'Status'),
            sortHeader('totalTransactions', 'Transactions', true),
            sortHeader('totalAmountSpent', 'Spent', true),
            sortHeader('lastActivityDate', 'Last activity'),
            h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')),
          ),
        ),
        h('tbody', {}, items.map(row)),
      ),
    );
  };

  /** @param {import('../types.js').Customer} customer */
  const row = (customer) => {
    const edit = h('button', { type: 'button', class: 'link-button', 'aria-label': `Edit ${customer.name}` }, 'Edit');
    edit.addEventListener('click', async () => {
      if (await customerDialog(customer)) {
        notify('Customer saved.');
        void load();
      }
    });
    let remove = null;
    if (session.can('deleteCustomers')) {
      remove = h('button', { type: 'button', class: 'link-button danger', 'aria-label': `Delete ${customer.name}` }, 'Delete');
      remove.addEventListener('click', async () => {
        const sure = await confirmAction({ title: 'Delete customer', text: `Delete ${customer.name} (${customer.email})? This cannot be undone.`, confirm: 'Delete', danger: true });
        if (!sure) return;
        try {
          await api.customers.remove(customer.id);
          notify(`${customer.name} was deleted.`);
        } catch (error) {
          notify(describe(error));
        }
        void load();
      });
    }
    return h(
      'tr',
      {},
      h('td', {}, h('span', { class: 'strong' }, customer.name), h('span', { class: 'muted small block' }, customer.email)),
      h('td', { 'data-label': 'Country' }, customer.country),
      h('td', { 'data-label': 'Status' }, h('span', { class: `badge status-${customer.status}` }, CUSTOMER_STATUS_NAMES[customer.status])),
      h('td', { class: 'num', 'data-label': 'Transactions' }, count(customer.totalTransactions)),
      h('td', { class: 'num', 'data-label': 'Spent' }, money(customer.totalAmountSpent)),
      h('td', { 'data-label': 'Last activity' }, date(customer.lastActivityDate)),
      h('td', { class: 'row-actions' }, edit, remove),
    );
  };

  /** @param {number} total */
  const empty = (total) => {
    const filtered = filters.search || filters.country || filters.status !== 'all';
    if (filtered) return emptyState('No customers match', 'Try a shorter search or fewer filters.', h('a', { href: '/customers', class: 'button secondary' }, 'Clear filters'));
    if (total === 0 && filters.page === 1) return emptyState('No customers yet', 'Add your first customer, or import a CSV file of them.');
    return emptyState('This page is empty', 'There are fewer customers than this page number.', h('a', { href: urlOf({ ...filters, page: 1 }), class: 'button secondary' }, 'Go to the first page'));
  };

  /** @param {number} total */
  const pager = (total) => {
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    if (pages <= 1 && filters.page === 1) return null;
    const link = (/** @type {number} */ page, /** @type {string} */ label, /** @type {boolean} */ enabled) =>
      enabled ? h('a', { href: urlOf({ ...filters, page }), class: 'button secondary small', rel: label === 'Next' ? 'next' : 'prev' }, label) : h('span', { class: 'button secondary small', 'aria-disabled': 'true' }, label);
    return h('nav', { class: 'pager', 'aria-label': 'Pages' }, link(filters.page - 1, 'Previous', filters.page > 1), h('span', { class: 'muted' }, `Page ${count(filters.page)} of ${count(pages)}`), link(filters.page + 1, 'Next', filters.page < pages));
  };

  void load();
  return {
    update(place) {
      filters = filtersOf(place.query);
      // Typing leads here with the URL already matching the box; back and forward bring other values to show.
      if (search.value.trim() !== filters.search) search.value = filters.search;
      if (country.value.trim() !== filters.country) country.value = filters.country;
      status.value = filters.status;
      void load();
    },
  };
}
