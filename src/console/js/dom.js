// @ts-check
// Building the page from elements, never from HTML strings: text is always text, so nothing a customer's name holds
// can become markup, and the strict Content-Security-Policy needs no exceptions.

/** @typedef {import('./types.js').Child} Child */
/** @typedef {Record<string, unknown>} Attrs */

/** Properties set on the element itself rather than as attributes. */
const PROPERTIES = new Set(['value', 'checked', 'disabled', 'hidden', 'selected', 'open', 'indeterminate', 'readOnly', 'required', 'multiple']);

/**
 * Returns a new element with attributes, listeners (`onclick: fn`) and children (text or nodes).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  apply(element, attrs);
  append(element, children);
  return element;
}

/**
 * Returns a new SVG element with attributes and children.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...Child} children
 * @returns {SVGElementTagNameMap[K]}
 */
export function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  apply(element, attrs);
  append(element, children);
  return element;
}

/**
 * @param {Element} element
 * @param {Attrs} attrs
 */
function apply(element, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
    } else if (name === 'class') {
      element.setAttribute('class', String(value));
    } else if (name === 'dataset' && typeof value === 'object') {
      for (const [key, data] of Object.entries(value)) /** @type {HTMLElement} */ (element).dataset[key] = String(data);
    } else if (PROPERTIES.has(name)) {
      /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (element))[name] = value;
    } else {
      element.setAttribute(name, value === true ? '' : String(value));
    }
  }
}

/**
 * Appends children: strings and numbers as text, nested arrays flattened, empty values skipped.
 * @param {Element} parent
 * @param {Child[]} children
 */
export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(typeof child === 'number' ? String(child) : child);
  }
}

/**
 * Replaces an element's children.
 * @param {Element} parent
 * @param {...Child} children
 */
export function replace(parent, ...children) {
  parent.replaceChildren();
  append(parent, children);
}

let counter = 0;
/**
 * Returns an id unique in the page, for `for` and `aria-describedby`.
 * @param {string} prefix
 */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/**
 * Returns a function that runs `fn` once calls have paused for `ms`.
 * @template {unknown[]} A
 * @param {(...args: A) => void} fn
 * @param {number} ms
 * @returns {((...args: A) => void) & { cancel(): void }}
 */
export function debounce(fn, ms) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const run = (/** @type {A} */ ...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  run.cancel = () => clearTimeout(timer);
  return run;
}

/**
 * Returns a random identifier; `crypto.randomUUID` exists only on secure origins, so plain-http deployments get one
 * built from `getRandomValues`.
 */
export function randomId() {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The page heading of a screen, focusable so that navigation can move focus to it.
 * @param {string} title
 * @param {Child} [subtitle]
 * @param {...Child} actions
 */
export function pageHeader(title, subtitle, ...actions) {
  return h(
    'header',
    { class: 'page-header' },
    h('div', {}, h('h1', { tabindex: '-1' }, title), subtitle ? h('p', { class: 'muted' }, subtitle) : null),
    actions.length ? h('div', { class: 'page-actions' }, ...actions) : null,
  );
}

/**
 * A small inline status: a spinner and words, announced politely.
 * @param {string} text
 */
export function loading(text) {
  return h('p', { class: 'loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

/**
 * A friendly empty state with an optional action.
 * @param {string} title
 * @param {string} text
 * @param {...Child} actions
 */
export function emptyState(title, text, ...actions) {
  return h('div', { class: 'empty' }, h('p', { class: 'empty-title' }, title), h('p', { class: 'muted' }, text), ...actions);
}
