// @ts-check
// Files the service serves only with the Authorization header (CSV exports, an import's skipped rows): a plain link
// would carry no token, so the file is fetched, held as a Blob and saved through a temporary <a download>.
import { h } from './dom.js';
import { describe } from './problems.js';

/** @typedef {{ blob: Blob, fileName: string }} DownloadedFile */

/**
 * Returns the body of a file answer with the name its Content-Disposition gives, or `fallback` when it gives none.
 * @param {Response} response
 * @param {string} fallback
 * @returns {Promise<DownloadedFile>}
 */
export async function fileOf(response, fallback) {
  const disposition = response.headers.get('content-disposition') ?? '';
  const named = /filename="([^"]+)"/i.exec(disposition) ?? /filename=([^;\s]+)/i.exec(disposition);
  return { blob: await response.blob(), fileName: named?.[1] || fallback };
}

/**
 * Saves `blob` as a file named `fileName`, as a click on a download link would.
 * @param {Blob} blob
 * @param {string} fileName
 */
export function saveFile(blob, fileName) {
  const url = URL.createObjectURL(blob);
  const link = h('a', { href: url, download: fileName });
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has taken the file by the time the click returns; the URL is kept a while for slow save dialogs.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * A button that fetches a file and saves it: busy while the file comes, then "Downloaded <name>." announced beside
 * it, or what went wrong.
 * @param {{ label: import('./dom.js').Child, fetchFile: () => Promise<DownloadedFile>, class?: string }} options
 */
export function downloadButton({ label, fetchFile, class: className = 'button secondary' }) {
  const button = h('button', { type: 'button', class: className }, label);
  const said = h('span', { class: 'download-note muted small', role: 'status' });
  const failed = h('span', { class: 'download-note field-error', role: 'alert' });
  button.addEventListener('click', async () => {
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    failed.textContent = '';
    said.textContent = 'Preparing the file…';
    try {
      const { blob, fileName } = await fetchFile();
      saveFile(blob, fileName);
      said.textContent = `Downloaded ${fileName}.`;
    } catch (error) {
      said.textContent = '';
      failed.textContent = describe(error);
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  });
  return h('span', { class: 'download' }, button, said, failed);
}
