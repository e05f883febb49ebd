// @ts-check
// Users (admins only): who can sign in, with which role; create, change role, deactivate or reactivate.
import * as api from '../endpoints.js';
import { h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, field, formError, notify, openDialog, select } from '../forms.js';
import { dateTime, ROLE_NAMES } from '../format.js';
import { clearFormErrors, describe, errorBox, showFormError } from '../problems.js';
import * as session from '../session.js';

/** @typedef {import('../types.js').User} User */
/** @typedef {import('../types.js').Role} Role */

/** What each role may do (product.md's table of roles), said before a role changes. */
const ROLE_ALLOWS = /** @type {const} */ ({
  lifecycle_marketer: 'they can draft and submit campaigns, but not approve them, delete customers or manage users.',
  marketing_lead: 'they can also approve campaigns and delete customers, but not manage users or webhooks.',
  admin: 'they can do everything, managing users and webhooks included.',
});

/** @type {import('../types.js').Screen} */
export function usersScreen(root, { signal }) {
  document.title = 'Users · Campaign console';
  const list = h('div', {}, loading('Loading users…'));
  const create = h('button', { type: 'button', class: 'button' }, 'New user');
  create.addEventListener('click', async () => {
    const user = await newUserDialog();
    if (user) {
      notify(`${user.fullName} can now sign in as ${ROLE_NAMES[user.role].toLowerCase()}.`);
      void load();
    }
  });
  root.append(pageHeader('Users', 'Who can sign in to the console, and what their role allows.', create), list);

  const load = async () => {
    try {
      const users = await api.users.list({ signal });
      replace(list, table(users));
    } catch (error) {
      replace(list, errorBox(error));
    }
  };

  /** @param {User[]} users */
  const table = (users) =>
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'data' },
        h('caption', { class: 'visually-hidden' }, 'Users'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Role'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Since'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
        h('tbody', {}, users.map(row)),
      ),
    );

  /** @param {User} user */
  const row = (user) => {
    const isMe = user.id === session.user()?.id;
    const role = select({ 'aria-label': `Role of ${user.fullName}`, class: 'compact' }, Object.entries(ROLE_NAMES), user.role);
    role.disabled = isMe || !user.isActive;
    role.addEventListener('change', async () => {
      const chosen = /** @type {Role} */ (role.value);
      const sure = await confirmAction({
        title: 'Change role',
        text: `${user.fullName} will be ${ROLE_NAMES[chosen].toLowerCase()} instead of ${ROLE_NAMES[user.role].toLowerCase()}: ${ROLE_ALLOWS[chosen]}`,
        confirm: 'Change role',
      });
      if (!sure) {
        role.value = user.role;
        return;
      }
      try {
        const updated = await api.users.update(user.id, { role: chosen });
        notify(`${updated.fullName} is now ${ROLE_NAMES[updated.role].toLowerCase()}.`);
      } catch (error) {
        role.value = user.role;
        notify(describe(error));
      }
      void load();
    });
    const toggle = h('button', { type: 'button', class: user.isActive ? 'link-button danger' : 'link-button' }, user.isActive ? 'Deactivate' : 'Reactivate');
    toggle.addEventListener('click', async () => {
      if (user.isActive) {
        const sure = await confirmAction({ title: 'Deactivate user', text: `${user.fullName} will be signed out at once and cannot sign in until reactivated.`, confirm: 'Deactivate', danger: true });
        if (!sure) return;
      }
      try {
        await api.users.update(user.id, { isActive: !user.isActive });
        notify(user.isActive ? `${user.fullName} was deactivated.` : `${user.fullName} was reactivated.`);
      } catch (error) {
        notify(describe(error));
      }
      void load();
    });
    return h(
      'tr',
      { class: user.isActive ? '' : 'inactive-row' },
      h('td', {}, h('span', { class: 'strong' }, user.fullName), isMe ? h('span', { class: 'muted small' }, ' (you)') : null, h('span', { class: 'muted small block' }, user.email)),
      h('td', { 'data-label': 'Role' }, role),
      h('td', { 'data-label': 'Status' }, h('span', { class: `badge ${user.isActive ? 'status-active' : 'status-inactive'}` }, user.isActive ? 'Active' : 'Deactivated')),
      h('td', { 'data-label': 'Since' }, dateTime(user.createdAt)),
      h('td', { class: 'row-actions' }, isMe ? null : toggle),
    );
  };

  void load();
}

/** @returns {Promise<User | undefined>} */
function newUserDialog() {
  return openDialog('New user', (close) => {
    const fullName = h('input', { name: 'fullName', required: true, maxlength: '120', autocomplete: 'off' });
    const email = h('input', { name: 'email', type: 'email', required: true, autocomplete: 'off', spellcheck: 'false' });
    const role = select({ name: 'role' }, Object.entries(ROLE_NAMES), 'lifecycle_marketer');
    const password = h('input', { name: 'password', type: 'password', autocomplete: 'new-password', minlength: '8', maxlength: '128' });
    const save = h('button', { type: 'submit', class: 'button' }, 'Create user');
    const form = h(
      'form',
      { class: 'stack', novalidate: true },
      formError(),
      field({ label: 'Full name', control: fullName }),
      field({ label: 'Email', control: email }),
      field({ label: 'Role', control: role, hint: 'Lifecycle marketers draft and submit; leads also approve and delete customers; admins also manage users.' }),
      field({ label: 'Starting password', control: password, hint: '8 to 128 characters. Share it with them privately.' }),
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'button secondary', onclick: () => close() }, 'Cancel'), save),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearFormErrors(form);
      save.disabled = true;
      try {
        close(await api.users.create({ fullName: fullName.value, email: email.value, role: /** @type {Role} */ (role.value), password: password.value }));
      } catch (error) {
        showFormError(form, error);
        save.disabled = false;
      }
    });
    queueMicrotask(() => fullName.focus());
    return form;
  });
}
