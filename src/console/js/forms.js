// @ts-check
// Labelled form fields with a place for their error, submitting a form, modal dialogs, confirmations and short notices.
import { h, uid } from './dom.js';
import { clearFormErrors, showFormError } from './problems.js';

/**
 * A labelled field: the control gets an id, its label, a hint and an error slot it is described by.
 * `field` names the API field whose errors belong here (defaults to the control's name).
 * @param {{ label: string, control: HTMLElement, hint?: import('./dom.js').Child, field?: string, class?: string }} options
 */
export function field({ label, control, hint, field: name, class: className }) {
  const id = control.id || uid('field');
  control.id = id;
  const errorId = `${id}-error`;
  const hintId = hint ? `${id}-hint` : '';
  control.setAttribute('data-error-slot', errorId);
  control.setAttribute('aria-describedby', [hintId, errorId].filter(Boolean).join(' '));
  if (name) control.setAttribute('data-field', name);
  return h(
    'div',
    { class: `field ${className ?? ''}`.trim() },
    h('label', { for: id }, label),
    control,
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    h('p', { class: 'field-error', id: errorId, hidden: true }),
  );
}

/**
 * A `<select>` of options given as [value, label] pairs.
 * @param {Record<string, unknown>} attrs
 * @param {[string, string][]} options
 * @param {string} [selected]
 */
export function select(attrs, options, selected) {
  return h('select', attrs, options.map(([value, label]) => h('option', { value, selected: value === selected }, label)));
}

/** The box a form's overall error goes in; filled by showFormError. */
export function formError() {
  return h('div', { class: 'alert form-error', role: 'alert', hidden: true });
}

/**
 * Makes submitting `form` run `send`, its errors cleared and `button` disabled meanwhile. A failure is shown on the
 * form through `explain` (which may move an error onto a field) and enables the button again; after a success the
 * button stays disabled, since the caller closes or redraws the form.
 * @param {HTMLElement} form
 * @param {HTMLButtonElement} button
 * @param {() => Promise<void>} send
 * @param {(error: unknown) => unknown} [explain]
 */
export function submitForm(form, button, send, explain = (error) => error) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFormErrors(form);
    button.disabled = true;
    try {
      await send();
    } catch (error) {
      showFormError(form, explain(error));
      button.disabled = false;
    }
  });
}

/**
 * Opens a modal dialog holding `content`; resolves with the value passed to `close` (undefined on Escape).
 * Focus returns to where it was; `closed` aborts when the dialog closes, however that happens.
 * @template T
 * @param {string} title
 * @param {(close: (value?: T) => void, closed: AbortSignal) => import('./dom.js').Child} build
 * @returns {Promise<T | undefined>}
 */
export function openDialog(title, build) {
  const previous = document.activeElement;
  const titleId = uid('dialog-title');
  const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId });
  /** @type {T | undefined} */
  let result;
  /** @param {T} [value] */
  const close = (value) => {
    result = value;
    dialog.close();
  };
  dialog.append(
    h('div', { class: 'dialog-head' }, h('h2', { id: titleId }, title), h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Close', onclick: () => close() }, '×')),
  );
  const closing = new AbortController();
  const body = build(close, closing.signal);
  if (body) dialog.append(/** @type {Node} */ (body));
  document.body.append(dialog);
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      closing.abort();
      dialog.remove();
      if (previous instanceof HTMLElement) previous.focus();
      resolve(result);
    });
  });
}

/**
 * Asks to confirm an action; resolves true when confirmed.
 * @param {{ title: string, text: string, confirm: string, danger?: boolean }} options
 */
export async function confirmAction({ title, text, confirm, danger }) {
  const answer = await openDialog(title, (close) =>
    h(
      'div',
      {},
      h('p', {}, text),
      h(
        'div',
        { class: 'dialog-actions' },
        h('button', { type: 'button', class: 'button secondary', onclick: () => close(false) }, 'Cancel'),
        h('button', { type: 'button', class: danger ? 'button danger' : 'button', onclick: () => close(true), autofocus: true }, confirm),
      ),
    ),
  );
  return answer === true;
}

/**
 * A short notice at the foot of the screen, announced to screen readers.
 * @param {string} text
 */
export function notify(text) {
  const region = document.getElementById('notices');
  if (!region) return;
  const notice = h('p', { class: 'notice' }, text);
  region.append(notice);
  setTimeout(() => notice.remove(), 5000);
}

/**
 * Counts the characters of a text control against a limit, live: "34 / 60".
 * @param {HTMLInputElement | HTMLTextAreaElement} control
 * @param {number} max
 * @param {number} [min]
 */
export function characterCounter(control, max, min = 0) {
  const counter = h('span', { class: 'counter' });
  const update = () => {
    const length = control.value.trim().length;
    counter.textContent = min && length < min ? `${length} / ${max} (at least ${min})` : `${length} / ${max}`;
    counter.classList.toggle('over', length > max || (min > 0 && length > 0 && length < min));
  };
  control.addEventListener('input', update);
  update();
  return Object.assign(counter, { update });
}
