// @ts-check
// Signing in with email and password; says so when a session has just expired.
import { h } from '../dom.js';
import { field, formError } from '../forms.js';
import { clearFormErrors, showFormError } from '../problems.js';
import * as session from '../session.js';

/**
 * Shows the sign-in form in `root`; calls `onSignedIn` with the user once signed in.
 * @param {HTMLElement} root
 * @param {{ expired?: boolean, onSignedIn: (user: import('../types.js').User) => void }} options
 */
export function signInScreen(root, { expired, onSignedIn }) {
  document.title = 'Sign in · Campaign console';
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true, spellcheck: 'false' });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true, minlength: '8', maxlength: '128' });
  const submit = h('button', { type: 'submit', class: 'button wide' }, 'Sign in');
  const form = h(
    'form',
    { class: 'stack', novalidate: true },
    expired ? h('div', { class: 'alert info', role: 'status' }, h('p', {}, 'Your session has expired. Sign in again to continue where you were.')) : null,
    formError(),
    field({ label: 'Email', control: email }),
    field({ label: 'Password', control: password }),
    submit,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearFormErrors(form);
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    try {
      onSignedIn(await session.signIn(email.value, password.value));
    } catch (error) {
      showFormError(form, error);
      if (!form.querySelector('[aria-invalid="true"]')) password.select();
      submit.disabled = false;
      submit.textContent = 'Sign in';
    }
  });
  root.replaceChildren(
    h(
      'main',
      { class: 'sign-in', id: 'main' },
      h('div', { class: 'card sign-in-card' }, h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), 'Campaign console'), h('h1', {}, 'Sign in'), form),
    ),
  );
  email.focus();
}
