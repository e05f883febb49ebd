// @ts-check
// The console's start: resume or ask for a session, then the sidebar layout and the screen the URL names.
import { h, replace } from './dom.js';
import { ROLE_NAMES, useCurrency } from './format.js';
import { describe } from './problems.js';
import { here, onNavigate } from './router.js';
import * as session from './session.js';
import { assistantScreen } from './screens/assistant.js';
import { campaignScreen } from './screens/campaign.js';
import { campaignsScreen } from './screens/campaigns.js';
import { customersScreen } from './screens/customers.js';
import { newCampaignScreen } from './screens/new-campaign.js';
import { overviewScreen } from './screens/overview.js';
import { segmentEditorScreen } from './screens/segment-editor.js';
import { segmentsScreen } from './screens/segments.js';
import { signInScreen } from './screens/sign-in.js';
import { usersScreen } from './screens/users.js';
import { webhookScreen } from './screens/webhook.js';
import { webhooksScreen } from './screens/webhooks.js';

/** @typedef {import('./types.js').Screen} Screen */
/** @typedef {{ pattern: RegExp, nav: string, screen: Screen, allowed?: () => boolean }} Route */

/** @type {Route[]} */
const ROUTES = [
  { pattern: /^\/$/, nav: '/', screen: overviewScreen },
  { pattern: /^\/customers\/?$/, nav: '/customers', screen: customersScreen },
  { pattern: /^\/segments\/?$/, nav: '/segments', screen: segmentsScreen },
  { pattern: /^\/segments\/(?<id>[^/]+)$/, nav: '/segments', screen: segmentEditorScreen },
  { pattern: /^\/campaigns\/?$/, nav: '/campaigns', screen: campaignsScreen },
  { pattern: /^\/campaigns\/new$/, nav: '/campaigns', screen: newCampaignScreen },
  { pattern: /^\/campaigns\/(?<id>[^/]+)$/, nav: '/campaigns', screen: campaignScreen },
  { pattern: /^\/assistant(?:\/(?<id>[^/]+))?\/?$/, nav: '/assistant', screen: assistantScreen },
  { pattern: /^\/users\/?$/, nav: '/users', screen: usersScreen, allowed: () => session.can('manageUsers') },
  { pattern: /^\/webhooks\/?$/, nav: '/webhooks', screen: webhooksScreen, allowed: () => session.can('manageWebhooks') },
  { pattern: /^\/webhooks\/(?<id>[^/]+)$/, nav: '/webhooks', screen: webhookScreen, allowed: () => session.can('manageWebhooks') },
];

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/customers', label: 'Customers' },
  { href: '/segments', label: 'Segments' },
  { href: '/campaigns', label: 'Campaigns' },
  { href: '/assistant', label: 'Assistant' },
  { href: '/users', label: 'Users', allowed: () => session.can('manageUsers') },
  { href: '/webhooks', label: 'Webhooks', allowed: () => session.can('manageWebhooks') },
];

const app = /** @type {HTMLElement} */ (document.getElementById('app'));

/** @type {{ route: Route, controller: AbortController, view: ReturnType<Screen> } | null} */
let current = null;
/** @type {{ main: HTMLElement, links: HTMLAnchorElement[], nav: HTMLElement, toggle: HTMLButtonElement } | null} */
let shell = null;

/** @param {{ expired?: boolean }} [options] */
function showSignIn(options = {}) {
  current?.controller.abort();
  current = null;
  shell = null;
  signInScreen(app, { expired: options.expired, onSignedIn: () => showShell(true) });
}

/**
 * The layout and the screen of the URL; after signing in the focus goes to the screen's heading, after a reload it
 * stays at the top of the page as the browser left it.
 * @param {boolean} moveFocus
 */
function showShell(moveFocus) {
  const user = /** @type {import('./types.js').User} */ (session.user());
  useCurrency(session.settings().currency);
  const links = NAV.filter((item) => !item.allowed || item.allowed()).map((item) => h('a', { href: item.href }, item.label));
  const nav = h('nav', { id: 'primary-nav', 'aria-label': 'Main' }, h('ul', {}, links.map((link) => h('li', {}, link))));
  const toggle = h('button', { type: 'button', class: 'menu-toggle', 'aria-expanded': 'false', 'aria-controls': 'primary-nav' }, 'Menu');
  toggle.addEventListener('click', () => toggle.setAttribute('aria-expanded', String(toggle.getAttribute('aria-expanded') !== 'true')));
  const signOut = h('button', { type: 'button', class: 'button secondary small' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    signOut.disabled = true;
    await session.signOut();
    showSignIn();
  });
  const main = h('main', { id: 'main', tabindex: '-1' });
  replace(
    app,
    h(
      'div',
      { class: 'shell' },
      h(
        'header',
        { class: 'sidebar' },
        h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Campaign console'),
        toggle,
        nav,
        h('div', { class: 'account' }, h('p', { class: 'account-name' }, user.fullName), h('p', { class: 'muted small', 'data-role': user.role }, ROLE_NAMES[user.role]), signOut),
      ),
      main,
    ),
  );
  shell = { main, links, nav, toggle };
  current = null;
  show(here(), moveFocus);
}

/**
 * Shows the screen for a place; a screen that takes query changes in place keeps its state.
 * @param {import('./types.js').Place} place
 * @param {boolean} [moveFocus]
 */
function show(place, moveFocus = true) {
  if (!shell) return;
  shell.toggle.setAttribute('aria-expanded', 'false');
  const found = ROUTES.map((route) => ({ route, match: route.pattern.exec(place.path) })).find(({ match, route }) => match && (!route.allowed || route.allowed()));
  for (const link of shell.links) {
    if (found && link.getAttribute('href') === found.route.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (found?.match && current && current.route === found.route && current.view) {
    current.view.update(place, { ...found.match.groups });
    return;
  }
  current?.controller.abort();
  const main = shell.main;
  main.replaceChildren();
  window.scrollTo(0, 0);
  if (!found?.match) {
    current = null;
    notFound(main);
  } else {
    const controller = new AbortController();
    const params = /** @type {Record<string, string>} */ ({ ...found.match.groups });
    current = { route: found.route, controller, view: undefined };
    current.view = found.route.screen(main, { params, query: place.query, signal: controller.signal });
  }
  if (moveFocus) focusHeading(main, current?.controller.signal);
}

/**
 * Moves the focus to the screen's heading (an h1 with tabindex -1), so a screen reader starts at the new page; a
 * screen that loads first draws its heading later, so that one is awaited, unless the user has moved into the page
 * meanwhile or left it.
 * @param {HTMLElement} main
 * @param {AbortSignal} [signal]
 */
function focusHeading(main, signal) {
  const heading = () => /** @type {HTMLElement | null} */ (main.querySelector('h1'));
  const found = heading();
  if (found) return found.focus();
  const watcher = new MutationObserver(() => {
    const late = heading();
    if (!late) return;
    watcher.disconnect();
    if (!main.contains(document.activeElement) || document.activeElement === main) late.focus();
  });
  watcher.observe(main, { childList: true, subtree: true });
  signal?.addEventListener('abort', () => watcher.disconnect(), { once: true });
}

/** @param {HTMLElement} main */
function notFound(main) {
  document.title = 'Not found · Campaign console';
  main.append(
    h('header', { class: 'page-header' }, h('div', {}, h('h1', { tabindex: '-1' }, 'There is no page here'))),
    h('p', {}, 'The address may be mistyped, or this page is not available to your role. ', h('a', { href: '/' }, 'Go to the overview'), '.'),
  );
}

onNavigate((place) => show(place));
session.onExpired(() => showSignIn({ expired: true }));

async function start() {
  try {
    const user = await session.resume();
    if (user) showShell(false);
    else showSignIn();
  } catch (error) {
    const retry = h('button', { type: 'button', class: 'button' }, 'Try again');
    retry.addEventListener('click', () => void start());
    replace(app, h('main', { class: 'sign-in', id: 'main' }, h('div', { class: 'card sign-in-card' }, h('h1', {}, 'The console cannot start'), h('p', {}, describe(error)), retry)));
  }
}

void start();
