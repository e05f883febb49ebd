// @ts-check
// The signed-in session: the access token lives only in memory, the refresh token in sessionStorage (this tab
// only, gone when it closes). The token is renewed shortly before it expires and whenever the service refuses it,
// one renewal at a time however many requests are waiting for it.
import { ApiError, request, useAuth } from './api.js';

/** @typedef {import('./types.js').Session} Session */
/** @typedef {import('./types.js').User} User */
/** @typedef {import('./types.js').Role} Role */

const STORAGE_KEY = 'campaign-console.refresh-token';

/** @type {string | null} */
let accessToken = null;
/** When the access token stops working, in page-clock milliseconds. */
let expiresAt = 0;
/** @type {User | null} */
let currentUser = null;
/** @typedef {{ currency: string | null }} Settings */
/** @type {Settings} */
let serviceSettings = { currency: null };
/** @type {Promise<string> | null} */
let renewal = null;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
/** @type {Set<() => void>} */
const expiredListeners = new Set();
/** Counts sessions forgotten, so an answer to a refresh sent before signing out cannot revive the session. */
let generation = 0;

/** The signed-in user, or null. */
export function user() {
  return currentUser;
}

/** The service's settings the pages show by (the currency of amounts), as loaded with the user. */
export function settings() {
  return serviceSettings;
}

/**
 * Calls `listener` when the session ends by itself (the refresh token was refused): the page then asks to sign in.
 * @param {() => void} listener
 */
export function onExpired(listener) {
  expiredListeners.add(listener);
}

/**
 * Signs in and returns the user; throws ApiError (`invalid_credentials`, `rate_limited`, ...).
 * @param {string} email
 * @param {string} password
 */
export async function signIn(email, password) {
  adopt(await request('POST', '/v1/auth/sign-in', { body: { email, password }, anonymous: true }));
  return loadUser();
}

/** Resumes the session of this tab after a reload; returns the user, or null when there is none to resume. */
export async function resume() {
  if (!sessionStorage.getItem(STORAGE_KEY)) return null;
  try {
    await renew();
  } catch (error) {
    if (error instanceof ApiError && error.code === 'session_expired') return null;
    throw error;
  }
  return loadUser();
}

/** Revokes the refresh token and forgets the session; a failure to reach the service still signs out here. */
export async function signOut() {
  await renewal?.catch(() => {}); // a renewal under way is about to replace the token: revoke the new one
  const refreshToken = sessionStorage.getItem(STORAGE_KEY);
  try {
    if (refreshToken && accessToken) await request('POST', '/v1/auth/sign-out', { body: { refreshToken } });
  } catch {
    // the token expires on its own; this tab forgets it either way
  } finally {
    forget();
  }
}

/**
 * What the signed-in user's role allows, as in product.md's table (webhooks: section 10); the console offers only these actions.
 * @param {'deleteCustomers' | 'review' | 'manageUsers' | 'manageWebhooks'} action
 */
export function can(action) {
  const role = currentUser?.role;
  if (action === 'manageUsers' || action === 'manageWebhooks') return role === 'admin';
  return role === 'marketing_lead' || role === 'admin';
}

/** Loads the user and, alongside, the service's settings. @returns {Promise<User>} */
async function loadUser() {
  const [user, answer] = await Promise.all([request('GET', '/v1/me'), request('GET', '/v1/settings')]);
  currentUser = user;
  serviceSettings = answer;
  return /** @type {User} */ (currentUser);
}

/** @param {Session} session */
function adopt(session) {
  accessToken = session.accessToken;
  sessionStorage.setItem(STORAGE_KEY, session.refreshToken);
  currentUser = session.user;
  const lifetimeMs = session.expiresIn * 1000;
  expiresAt = Date.now() + lifetimeMs;
  // Renew when four fifths of the lifetime have passed (at most a minute early), so requests never meet an expired token.
  const earlyMs = Math.min(60_000, lifetimeMs / 5);
  clearTimeout(timer);
  timer = setTimeout(() => void renew().catch(() => {}), lifetimeMs - earlyMs);
}

function forget() {
  generation += 1;
  clearTimeout(timer);
  accessToken = null;
  currentUser = null;
  expiresAt = 0;
  sessionStorage.removeItem(STORAGE_KEY);
}

/** Exchanges the refresh token for a new pair; concurrent callers share one exchange. Returns the new access token. */
function renew() {
  renewal ??= exchange().finally(() => {
    renewal = null;
  });
  return renewal;
}

/** @returns {Promise<string>} */
async function exchange() {
  const refreshToken = sessionStorage.getItem(STORAGE_KEY);
  if (!refreshToken) throw expired();
  const asked = generation;
  try {
    const session = await request('POST', '/v1/auth/refresh', { body: { refreshToken }, anonymous: true });
    if (asked !== generation) throw new ApiError({ status: 401, code: 'session_expired', detail: 'Signed out meanwhile.' });
    adopt(session);
  } catch (error) {
    if (asked !== generation) throw error;
    // Only a refused token ends the session; a network failure leaves it for the next try.
    if (error instanceof ApiError && (error.code === 'session_expired' || error.code === 'validation_failed')) throw expired();
    throw error;
  }
  return /** @type {string} */ (accessToken);
}

function expired() {
  const wasSignedIn = currentUser !== null || accessToken !== null;
  forget();
  if (wasSignedIn) for (const listener of expiredListeners) listener();
  return new ApiError({ status: 401, code: 'session_expired', detail: 'Your session has expired.' });
}

useAuth({
  async token() {
    if (renewal) return renewal;
    // The timer may have slept with the tab in the background: renew first rather than send a dead token.
    if (accessToken && Date.now() >= expiresAt - 1000) return renew();
    return accessToken;
  },
  async renew(refused) {
    if (renewal) return renewal;
    if (accessToken && accessToken !== refused) return accessToken; // another request already renewed it
    return renew();
  },
});
