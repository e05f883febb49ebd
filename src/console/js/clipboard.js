// @ts-check
// Copying text for another tool: the clipboard when the browser allows it, otherwise the text selected on the page
// with a word on how to copy it by hand (plain-http deployments have no clipboard API at all).
import { h } from './dom.js';

/** How long "Copied" stays beside the button. */
const SHOWN_MS = 2500;

/**
 * A "Copy" button for the text `text()` returns; `name` completes its accessible name ("Copy title"), and `source`,
 * the element showing the text, is selected when the clipboard is refused.
 * @param {{ text: () => string, name: string, source?: HTMLElement, label?: string }} options
 */
export function copyButton({ text, name, source, label = 'Copy' }) {
  const button = h('button', { type: 'button', class: 'button secondary small copy-button' }, label, h('span', { class: 'visually-hidden' }, ` ${name}`));
  const said = h('span', { class: 'copy-note small', role: 'status' });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  button.addEventListener('click', async () => {
    clearTimeout(timer);
    said.classList.remove('refused');
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(text());
      said.textContent = 'Copied';
      timer = setTimeout(() => (said.textContent = ''), SHOWN_MS);
    } catch {
      if (source) selectContents(source);
      said.classList.add('refused');
      said.textContent = source
        ? 'The browser did not allow copying. The text is selected: press Ctrl+C (⌘C on a Mac).'
        : 'The browser did not allow copying. Select the text and copy it by hand.';
    }
  });
  return h('span', { class: 'copy' }, button, said);
}

/** @param {HTMLElement} element */
function selectContents(element) {
  if (element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement) {
    element.focus();
    element.select();
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}
