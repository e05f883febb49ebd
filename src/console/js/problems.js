// @ts-check
// Problem documents in words a marketer understands, and field errors shown next to their fields.
import { ApiError, isAbort } from './api.js';
import { h, replace } from './dom.js';

/**
 * Returns one sentence saying what went wrong and what to do.
 * @param {unknown} error
 */
export function describe(error) {
  if (!(error instanceof ApiError)) return 'Something unexpected happened in the page. Reload it and try again.';
  const reference = error.traceId ? ` (Reference ${error.traceId}.)` : '';
  switch (error.code) {
    case 'validation_failed':
      return error.errors.length ? 'Some fields need attention.' : `Some details are not valid: ${error.detail}`;
    case 'invalid_credentials':
      return 'That email and password do not match an active account.';
    case 'unauthenticated':
    case 'session_expired':
      return 'Your session has expired. Sign in again to continue.';
    case 'forbidden':
      return 'Your role does not allow this. Ask a marketing lead or an admin.';
    case 'not_found':
      return 'This item no longer exists. Someone may have deleted it.';
    case 'conflict':
      return error.detail; // the service's sentence names the duplicate email or the moves a campaign can make
    case 'rate_limited':
      return `Too many attempts in a short time. Try again ${error.retryAfterSeconds ? `in ${waitText(error.retryAfterSeconds)}` : 'in a moment'}.`;
    case 'llm_unavailable':
      return 'The writing model cannot be reached right now. Try again in a moment.';
    case 'unavailable':
      return 'The service cannot reach its database right now (it may be switching to a standby). Try again in a few seconds.';
    case 'llm_error':
      return 'The writing model answered with something unusable. Try again, perhaps with a clearer objective.';
    case 'payload_too_large':
      return 'That is too much to send at once.';
    case 'network_error':
      return 'The service cannot be reached. Check your connection and try again.';
    case 'bad_response':
      return `The service answered unexpectedly (${error.status}). Try again in a moment.`;
    default:
      return `Something went wrong on the service's side. Try again; if it keeps happening, tell your admin.${reference}`;
  }
}

/** @param {number} seconds */
function waitText(seconds) {
  if (seconds < 90) return `${Math.ceil(seconds)} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

/**
 * An alert box for a failure, or nothing for an abort.
 * @param {unknown} error
 * @param {import('./dom.js').Child[]} actions
 */
export function errorBox(error, ...actions) {
  if (isAbort(error)) return null;
  return h('div', { class: 'alert', role: 'alert' }, h('p', {}, describe(error)), ...actions);
}

/**
 * Shows a failure on a form: each field error beside the control whose `data-field` (or `name`) matches it, and the
 * rest with the summary in the form's `.form-error` box. Returns whether anything was shown.
 * @param {HTMLElement} form
 * @param {unknown} error
 */
export function showFormError(form, error) {
  clearFormErrors(form);
  if (isAbort(error)) return false;
  const summary = form.querySelector('.form-error');
  /** @type {string[]} */
  const unplaced = [];
  let firstInvalid = /** @type {HTMLElement | null} */ (null);
  if (error instanceof ApiError) {
    for (const { field, message } of error.errors) {
      const control = form.querySelector(`[data-field="${CSS.escape(field)}"]`) ?? form.querySelector(`[name="${CSS.escape(field)}"]`);
      const slot = control && document.getElementById(control.getAttribute('data-error-slot') ?? '');
      if (!(control instanceof HTMLElement) || !slot) {
        unplaced.push(`${field}: ${message}`);
        continue;
      }
      control.setAttribute('aria-invalid', 'true');
      slot.textContent = message;
      slot.hidden = false;
      firstInvalid ??= control;
    }
  }
  if (summary instanceof HTMLElement) {
    replace(summary, h('p', {}, describe(error)), unplaced.length ? h('ul', {}, unplaced.map((text) => h('li', {}, text))) : null);
    summary.hidden = false;
  }
  firstInvalid?.focus();
  return true;
}

/** @param {HTMLElement} form */
export function clearFormErrors(form) {
  for (const control of form.querySelectorAll('[aria-invalid="true"]')) control.removeAttribute('aria-invalid');
  for (const slot of form.querySelectorAll('.field-error')) {
    slot.textContent = '';
    /** @type {HTMLElement} */ (slot).hidden = true;
  }
  const summary = form.querySelector('.form-error');
  if (summary instanceof HTMLElement) {
    summary.replaceChildren();
    summary.hidden = true;
  }
}
