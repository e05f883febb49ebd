// @ts-check
// Client-side routing with the history API: links inside the console change the URL without reloading, back and
// forward replay it, and a screen whose query changes (filters, pages) is told instead of being rebuilt.

/** @typedef {import('./types.js').Place} Place */
/** @type {Set<(place: Place) => void>} */
const listeners = new Set();

/** The current path and query. */
export function here() {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/**
 * Goes to a console URL: a new history entry, or a replaced one for in-place refinements.
 * @param {string} url
 * @param {{ replace?: boolean }} [options]
 */
export function navigate(url, options = {}) {
  const target = new URL(url, location.href);
  if (target.pathname + target.search === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  notify();
}

/**
 * Returns a URL for `path` with the non-empty values of `params`.
 * @param {string} path
 * @param {Record<string, string | number | undefined | null>} params
 */
export function urlFor(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  }
  return query.size ? `${path}?${query}` : path;
}

/**
 * Calls `listener` with the new place after every navigation.
 * @param {(place: Place) => void} listener
 */
export function onNavigate(listener) {
  listeners.add(listener);
}

function notify() {
  const place = here();
  for (const listener of listeners) listener(place);
}

addEventListener('popstate', notify);

// Same-origin links navigate in the page; modified clicks (new tab), downloads and other targets keep the browser's way.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target instanceof Element ? event.target.closest('a[href]') : null;
  if (!(link instanceof HTMLAnchorElement) || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/v1/')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
