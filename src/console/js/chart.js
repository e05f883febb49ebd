// @ts-check
// The monthly trend as an SVG bar chart drawn from elements at the container's own pixel width (so labels stay
// readable on a phone), with the numbers as a table for anyone who prefers or needs them.
import { h, svg } from './dom.js';
import { count, money, moneyShort, month } from './format.js';

/** @typedef {import('./types.js').TrendPoint} TrendPoint */
/** @typedef {'value' | 'customers'} Metric */

const HEIGHT = 240;
const PAD = { top: 12, right: 8, bottom: 28, left: 52 };
/** About the width of one character of an axis label at its 11 px size, so the longest label decides the left margin. */
const TICK_CHAR_WIDTH = 6.5;

/**
 * Returns the chart element; it redraws itself when its width changes.
 * @param {TrendPoint[]} points
 * @param {Metric} metric
 */
export function trendChart(points, metric) {
  const figure = h('figure', { class: 'chart' });
  // Each customer counts once, in the month of their last activity: the chart is no history of sign-ups or sales.
  const caption =
    metric === 'value'
      ? 'Lifetime value of customers, counting each customer by the month of their last activity'
      : 'Customers counted by the month of their last activity, churned ones shaded';
  const plot = h('div', { class: 'chart-plot' });
  figure.append(plot, h('figcaption', { class: 'muted' }, caption), numbersTable(points));
  let drawnWidth = 0;
  const draw = () => {
    const width = Math.max(280, Math.round(plot.clientWidth || 640));
    if (width === drawnWidth) return;
    drawnWidth = width;
    plot.replaceChildren(drawing(points, metric, width, caption));
  };
  new ResizeObserver(draw).observe(plot);
  queueMicrotask(draw);
  return figure;
}

/**
 * @param {TrendPoint[]} points
 * @param {Metric} metric
 * @param {number} width
 * @param {string} label
 */
function drawing(points, metric, width, label) {
  const values = points.map((p) => (metric === 'value' ? p.value : p.customers));
  const { max, step } = niceScale(Math.max(0, ...values));
  const tickText = (/** @type {number} */ v) => (metric === 'value' ? moneyShort(v) : count(v));
  const ticks = [];
  for (let v = 0; v <= max; v += step) ticks.push({ v, text: tickText(v) });
  // A currency makes the labels longer ("CHF 1.5M"): widen the margin rather than cut them at the edge.
  const left = Math.max(PAD.left, 10 + Math.ceil(TICK_CHAR_WIDTH * Math.max(...ticks.map((t) => t.text.length))));
  const innerW = width - left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  const y = (/** @type {number} */ v) => PAD.top + innerH - (max ? (v / max) * innerH : 0);
  const slot = innerW / Math.max(points.length, 1);
  const barW = Math.max(4, Math.min(48, slot * 0.62));
  const labelEvery = Math.ceil(44 / slot);

  const grid = ticks.flatMap(({ v, text }) => [
    svg('line', { x1: left, x2: width - PAD.right, y1: y(v), y2: y(v), class: 'grid' }),
    svg('text', { x: left - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, text),
  ]);
  const bars = points.map((point, i) => {
    const x = left + slot * i + (slot - barW) / 2;
    const total = values[i] ?? 0;
    const title = `${month(point.month)}: ${count(point.customers)} customers (${count(point.churned)} churned), value ${money(point.value)}`;
    const parts = [svg('rect', { x, y: y(total), width: barW, height: Math.max(0, y(0) - y(total)), rx: 3, class: 'bar' })];
    if (metric === 'customers' && point.churned > 0) {
      parts.push(svg('rect', { x, y: y(point.churned), width: barW, height: Math.max(0, y(0) - y(point.churned)), class: 'bar churned' }));
    }
    const text = i % labelEvery === (points.length - 1) % labelEvery ? svg('text', { x: x + barW / 2, y: HEIGHT - 8, 'text-anchor': 'middle', class: 'tick' }, month(point.month)) : null;
    return svg('g', {}, svg('title', {}, title), ...parts, text);
  });
  return svg('svg', { viewBox: `0 0 ${width} ${HEIGHT}`, width, height: HEIGHT, role: 'img', 'aria-label': label }, ...grid, ...bars);
}

/**
 * Returns a round top for the axis and the step between its four or so grid lines.
 * @param {number} largest
 */
export function niceScale(largest) {
  if (largest <= 0) return { max: 4, step: 1 };
  const raw = largest / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  return { max: Math.ceil(largest / step) * step, step };
}

/** @param {TrendPoint[]} points */
function numbersTable(points) {
  return h(
    'details',
    { class: 'chart-numbers' },
    h('summary', {}, 'Show the numbers'),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Month'), h('th', { scope: 'col', class: 'num' }, 'Customers'), h('th', { scope: 'col', class: 'num' }, 'Churned'), h('th', { scope: 'col', class: 'num' }, 'Value'))),
        h(
          'tbody',
          {},
          points.map((p) => h('tr', {}, h('th', { scope: 'row' }, month(p.month)), h('td', { class: 'num' }, count(p.customers)), h('td', { class: 'num' }, count(p.churned)), h('td', { class: 'num' }, money(p.value)))),
        ),
      ),
    ),
  );
}
