// @ts-check
// Overview: headline numbers, the health score and its parts, the monthly trend and the top customers.
import * as api from '../endpoints.js';
import { trendChart } from '../chart.js';
import { h, loading, pageHeader, replace, svg } from '../dom.js';
import { select } from '../forms.js';
import { count, countFigure, CUSTOMER_STATUS_NAMES, money, moneyFigure, percent, plural } from '../format.js';
import { errorBox } from '../problems.js';
import { navigate, urlFor } from '../router.js';

const MONTH_CHOICES = ['3', '6', '12', '24'];

/** @type {import('../types.js').Screen} */
export function overviewScreen(root, { query, signal }) {
  document.title = 'Overview · Campaign console';
  const kpiArea = h('section', { class: 'kpis', 'aria-label': 'Key figures' }, loading('Loading key figures…'));
  const healthArea = h('section', { class: 'card', 'aria-labelledby': 'health-title' }, h('h2', { id: 'health-title' }, 'Health score'), loading('Loading the health score…'));
  const trendArea = h('div', {}, loading('Loading the trend…'));
  const topArea = h('div', {}, loading('Loading top customers…'));
  let months = MONTH_CHOICES.includes(query.get('months') ?? '') ? Number(query.get('months')) : 12;
  let metric = query.get('metric') === 'customers' ? 'customers' : 'value';
  const monthsSelect = select({ id: 'trend-months' }, MONTH_CHOICES.map((m) => [m, `Last ${m} months`]), String(months));
  const metricSelect = select({ id: 'trend-metric' }, [['value', 'Customer value'], ['customers', 'Customers']], metric);

  root.append(
    pageHeader('Overview', 'How the customer base is doing right now.'),
    kpiArea,
    h(
      'div',
      { class: 'grid-2' },
      healthArea,
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'top-title' },
        h('h2', { id: 'top-title' }, 'Top customers'),
        topArea,
      ),
    ),
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'trend-title' },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { id: 'trend-title' }, 'Monthly trend'),
        h('div', { class: 'inline-controls' }, h('label', { for: 'trend-metric', class: 'visually-hidden' }, 'Show'), metricSelect, h('label', { for: 'trend-months', class: 'visually-hidden' }, 'Period'), monthsSelect),
      ),
      trendArea,
    ),
  );

  /** @type {AbortController | undefined} */
  let trendRequest;
  /** @type {import('../types.js').TrendPoint[]} */
  let points = [];
  const loadTrend = async () => {
    trendRequest?.abort();
    trendRequest = new AbortController();
    const stop = AbortSignal.any([signal, trendRequest.signal]);
    trendArea.setAttribute('aria-busy', 'true');
    try {
      points = await api.customers.trend(months, { signal: stop });
      replace(trendArea, trendChart(points, /** @type {'value' | 'customers'} */ (metric)));
    } catch (error) {
      replace(trendArea, errorBox(error));
    } finally {
      trendArea.removeAttribute('aria-busy');
    }
  };
  const placeOfControls = () => {
    const m = Number(monthsSelect.value);
    navigate(urlFor('/', { months: m === 12 ? undefined : m, metric: metricSelect.value === 'value' ? undefined : metricSelect.value }), { replace: true });
  };
  monthsSelect.addEventListener('change', placeOfControls);
  metricSelect.addEventListener('change', placeOfControls);

  const loadRest = async () => {
    const [kpis, health, top] = await Promise.allSettled([api.customers.kpis({ signal }), api.customers.health({ signal }), api.customers.top(5, { signal })]);
    if (kpis.status === 'fulfilled') replace(kpiArea, kpiCards(kpis.value));
    else replace(kpiArea, errorBox(kpis.reason));
    const heading = h('h2', { id: 'health-title' }, 'Health score');
    if (health.status === 'fulfilled') replace(healthArea, heading, healthPanel(health.value, kpis.status === 'fulfilled' ? kpis.value.totalCustomers : 0));
    else replace(healthArea, heading, errorBox(health.reason));
    if (top.status === 'fulfilled') replace(topArea, topTable(top.value));
    else replace(topArea, errorBox(top.reason));
  };
  void loadRest();
  void loadTrend();

  return {
    update(place) {
      const nextMonths = MONTH_CHOICES.includes(place.query.get('months') ?? '') ? Number(place.query.get('months')) : 12;
      const nextMetric = place.query.get('metric') === 'customers' ? 'customers' : 'value';
      monthsSelect.value = String(nextMonths);
      metricSelect.value = nextMetric;
      if (nextMonths !== months || points.length === 0) {
        months = nextMonths;
        metric = nextMetric;
        void loadTrend();
      } else if (nextMetric !== metric) {
        metric = nextMetric;
        replace(trendArea, trendChart(points, /** @type {'value' | 'customers'} */ (metric)));
      }
    },
  };
}

/** @param {import('../types.js').Kpis} kpis */
function kpiCards(kpis) {
  const total = kpis.totalCustomers;
  const share = (/** @type {number} */ n) => (total ? percent(Math.round((n / total) * 1000) / 10) : '0%');
  const statuses = /** @type {const} */ (['active', 'inactive', 'churned']);
  return [
    kpi('Customers', countFigure(total), `${plural(kpis.statusCounts.inactive, 'inactive customer')}`),
    kpi('Active customers', countFigure(kpis.activeCustomers), `${share(kpis.activeCustomers)} of the base`),
    kpi('Total customer value', moneyFigure(kpis.totalTransactionValue), 'lifetime, whole base'),
    kpi('Average customer value', moneyFigure(kpis.averageCustomerValue), 'per customer'),
    h(
      'div',
      { class: 'kpi status-mix' },
      h('p', { class: 'kpi-label' }, 'Status mix'),
      h('div', { class: 'mix-bar', role: 'img', 'aria-label': statuses.map((s) => `${CUSTOMER_STATUS_NAMES[s]} ${share(kpis.statusCounts[s])}`).join(', ') }, statuses.map((s) => mixPart(s, total ? kpis.statusCounts[s] / total : 0))),
      h('ul', { class: 'mix-legend' }, statuses.map((s) => h('li', {}, h('span', { class: `dot ${s}`, 'aria-hidden': 'true' }), `${CUSTOMER_STATUS_NAMES[s]} ${count(kpis.statusCounts[s])}`))),
    ),
  ];
}

/**
 * @param {string} status
 * @param {number} fraction
 */
function mixPart(status, fraction) {
  const part = h('span', { class: `mix-part ${status}` });
  part.style.width = `${(fraction * 100).toFixed(2)}%`; // CSSOM, which the style policy allows (no style attribute)
  return part;
}

/**
 * A headline figure in its card; a shortened one ("4.07M") keeps its exact value on hover and for screen readers.
 * @param {string} label
 * @param {import('../format.js').Figure} figure
 * @param {string} note
 */
function kpi(label, { shown, exact }, note) {
  const value =
    shown === exact
      ? h('p', { class: 'kpi-value' }, exact)
      : h('p', { class: 'kpi-value', title: exact }, h('span', { class: 'visually-hidden' }, exact), h('span', { 'aria-hidden': 'true' }, shown));
  return h('div', { class: 'kpi' }, h('p', { class: 'kpi-label' }, label), value, h('p', { class: 'muted small' }, note));
}

/**
 * The score as a ring with its level, then the parts it is made of.
 * @param {import('../types.js').Health} health
 * @param {number} total
 */
function healthPanel(health, total) {
  const inactiveShare = total ? (health.inactiveCount / total) * 100 : 0;
  const staleShare = total ? (health.staleActives / total) * 100 : 0;
  const circumference = 2 * Math.PI * 42;
  const ring = svg(
    'svg',
    { viewBox: '0 0 100 100', class: `ring ${health.level}`, role: 'img', 'aria-label': `Health score ${health.score} out of 100, ${health.level}` },
    svg('circle', { cx: 50, cy: 50, r: 42, class: 'ring-track' }),
    svg('circle', { cx: 50, cy: 50, r: 42, class: 'ring-value', 'stroke-dasharray': `${(health.score / 100) * circumference} ${circumference}`, transform: 'rotate(-90 50 50)' }),
    svg('text', { x: 50, y: 56, 'text-anchor': 'middle', class: 'ring-text' }, String(health.score)),
  );
  const levelText = { healthy: 'Healthy', attention: 'Needs attention', critical: 'Critical' }[health.level];
  return h(
    'div',
    { class: 'health' },
    h('div', { class: 'health-score' }, ring, h('p', { class: `badge level-${health.level}` }, levelText)),
    h(
      'dl',
      { class: 'health-parts' },
      part('Active share', percent(health.activeShare), 'of all customers are active'),
      part('Churned share', percent(health.churnedShare), `costs ${(health.churnedShare * 0.8).toFixed(1)} points`),
      part('Inactive', count(health.inactiveCount), `${percent(Math.round(inactiveShare * 10) / 10)} of the base, costs ${(inactiveShare * 0.5).toFixed(1)} points`),
      part('Stale actives', count(health.staleActives), `active but idle for 60+ days, costs ${(staleShare * 0.7).toFixed(1)} points`),
    ),
  );
}

/**
 * @param {string} term
 * @param {string} value
 * @param {string} note
 */
function part(term, value, note) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, h('strong', {}, value), ' ', h('span', { class: 'muted small' }, note)));
}

/** @param {import('../types.js').TopCustomers} top */
function topTable(top) {
  if (top.items.length === 0) return h('p', { class: 'muted' }, 'No customers yet.');
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Customer'), h('th', { scope: 'col' }, 'Country'), h('th', { scope: 'col', class: 'num' }, 'Spent'), h('th', { scope: 'col', class: 'num hide-narrow' }, 'Share'))),
      h(
        'tbody',
        {},
        top.items.map((c) =>
          h(
            'tr',
            {},
            h('td', {}, c.name, h('span', { class: `badge small status-${c.status}` }, CUSTOMER_STATUS_NAMES[c.status])),
            h('td', {}, c.country),
            h('td', { class: 'num' }, money(c.totalAmountSpent)),
            h('td', { class: 'num hide-narrow' }, top.totalValue ? percent(Math.round((c.totalAmountSpent / top.totalValue) * 1000) / 10) : '–'),
          ),
        ),
      ),
    ),
  );
}
