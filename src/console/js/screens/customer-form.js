// @ts-check
// Creating or editing one customer in a dialog; the service's field errors appear beside their fields.
import * as api from '../endpoints.js';
import { h } from '../dom.js';
import { field, formError, openDialog, select } from '../forms.js';
import { CUSTOMER_STATUS_NAMES } from '../format.js';
import { clearFormErrors, showFormError } from '../problems.js';

/** @typedef {import('../types.js').Customer} Customer */
/** @typedef {import('../types.js').CustomerInput} CustomerInput */

/**
 * Opens the form; resolves with the saved customer, or undefined when closed without saving.
 * @param {Customer | null} existing
 * @returns {Promise<Customer | undefined>}
 */
export function customerDialog(existing) {
  return openDialog(existing ? `Edit ${existing.name}` : 'New customer', (close) => {
    const name = h('input', { name: 'name', required: true, maxlength: '200', autocomplete: 'off', value: existing?.name ?? '' });
    const email = h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off', spellcheck: 'false', value: existing?.email ?? '' });
    const country = h('input', { name: 'country', required: true, maxlength: '80', value: existing?.country ?? '' });
    const status = select({ name: 'status' }, Object.entries(CUSTOMER_STATUS_NAMES), existing?.status ?? 'active');
    const transactions = h('input', { name: 'totalTransactions', type: 'number', min: '0', step: '1', inputmode: 'numeric', value: String(existing?.totalTransactions ?? 0) });
    const spent = h('input', { name: 'totalAmountSpent', type: 'number', min: '0', step: '0.01', inputmode: 'decimal', value: String(existing?.totalAmountSpent ?? 0) });
    const today = new Date().toISOString().slice(0, 10);
    const lastActivity = h('input', { name: 'lastActivityDate', type: 'date', max: today, value: existing ? existing.lastActivityDate.slice(0, 10) : today });
    const save = h('button', { type: 'submit', class: 'button' }, existing ? 'Save changes' : 'Create customer');
    const form = h(
      'form',
      { class: 'stack', novalidate: true },
      formError(),
      field({ label: 'Name', control: name }),
      field({ label: 'Email', control: email }),
      h('div', { class: 'row-2' }, field({ label: 'Country', control: country }), field({ label: 'Status', control: status })),
      h('div', { class: 'row-2' }, field({ label: 'Transactions', control: transactions }), field({ label: 'Total spent', control: spent })),
      field({ label: 'Last activity', control: lastActivity, hint: 'The day of their most recent purchase or visit.' }),
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'button secondary', onclick: () => close() }, 'Cancel'), save),
    );
    const number = (/** @type {HTMLInputElement} */ input) => (input.value.trim() === '' ? null : Number(input.value));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearFormErrors(form);
      /** @type {CustomerInput} */
      const values = {
        name: name.value,
        email: email.value,
        country: country.value,
        status: /** @type {CustomerInput['status']} */ (status.value),
        totalTransactions: number(transactions),
        totalAmountSpent: number(spent),
        lastActivityDate: lastActivity.value,
      };
      save.disabled = true;
      try {
        close(existing ? await api.customers.update(existing.id, changes(existing, values)) : await api.customers.create(values));
      } catch (error) {
        showFormError(form, error);
      } finally {
        save.disabled = false;
      }
    });
    queueMicrotask(() => name.focus());
    return form;
  });
}

/**
 * Only the fields that differ from the stored customer, so an edit never rewrites what it did not touch.
 * @param {Customer} existing
 * @param {CustomerInput} values
 * @returns {Partial<CustomerInput>}
 */
function changes(existing, values) {
  /** @type {Record<string, unknown>} */
  const out = {};
  const before = /** @type {Record<string, unknown>} */ ({ ...existing, lastActivityDate: existing.lastActivityDate.slice(0, 10) });
  for (const [key, value] of Object.entries(values)) {
    if (before[key] !== value) out[key] = value;
  }
  return out;
}
