// @ts-check
// Segments: the saved audiences with their sizes; rename, edit, delete, export the customers, or draft a campaign for one.
import * as api from '../endpoints.js';
import { emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, field, formError, notify, openDialog } from '../forms.js';
import { conditionText, count, dateTime, plural } from '../format.js';
import { clearFormErrors, describe, errorBox, showFormError } from '../problems.js';
import { exportButtons } from './segment-export.js';

/** @typedef {import('../types.js').Segment} Segment */

/** @type {import('../types.js').Screen} */
export function segmentsScreen(root, { signal }) {
  document.title = 'Segments · Campaign console';
  const list = h('div', {}, loading('Loading segments…'));
  root.append(pageHeader('Segments', 'Saved audiences: customers matching every condition.', h('a', { href: '/segments/new', class: 'button' }, 'New segment')), list);

  const load = async () => {
    try {
      const segments = await api.segments.list({ signal });
      replace(list, segments.length ? h('ul', { class: 'cards' }, segments.map(card)) : emptyState('No segments yet', 'A segment is an audience you can draft campaigns for. Build one from a few conditions.', h('a', { href: '/segments/new', class: 'button' }, 'New segment')));
    } catch (error) {
      replace(list, errorBox(error));
    }
  };

  /** @param {Segment} segment */
  const card = (segment) => {
    const rename = h('button', { type: 'button', class: 'link-button', 'aria-label': `Rename ${segment.name}` }, 'Rename');
    rename.addEventListener('click', async () => {
      if (await renameDialog(segment)) void load();
    });
    const remove = h('button', { type: 'button', class: 'link-button danger', 'aria-label': `Delete ${segment.name}` }, 'Delete');
    remove.addEventListener('click', async () => {
      const sure = await confirmAction({ title: 'Delete segment', text: `Delete the segment “${segment.name}”? Campaigns drafted for it are kept.`, confirm: 'Delete', danger: true });
      if (!sure) return;
      try {
        await api.segments.remove(segment.id);
        notify(`Segment “${segment.name}” deleted.`);
      } catch (error) {
        notify(describe(error));
      }
      void load();
    });
    return h(
      'li',
      { class: 'card segment-card' },
      h('div', { class: 'card-head' }, h('h2', {}, h('a', { href: `/segments/${encodeURIComponent(segment.id)}` }, segment.name)), h('p', { class: 'segment-size' }, h('strong', {}, count(segment.matchCount)), ' customers')),
      h('ul', { class: 'chips', 'aria-label': 'Conditions' }, segment.conditions.map((c) => h('li', { class: 'chip' }, conditionText(c)))),
      h('p', { class: 'muted small' }, `Saved ${dateTime(segment.updatedAt)}`),
      h(
        'div',
        { class: 'row-actions' },
        h('a', { href: `/segments/${encodeURIComponent(segment.id)}`, class: 'link-button', 'aria-label': `Edit ${segment.name}` }, 'Edit'),
        rename,
        h('a', { href: `/campaigns/new?segmentId=${encodeURIComponent(segment.id)}`, class: 'link-button' }, 'Draft a campaign'),
        remove,
      ),
      h('div', { class: 'row-actions' }, exportButtons(segment, 'link-button')),
    );
  };

  void load();
}

/**
 * Renames a segment; resolves true once renamed.
 * @param {Segment} segment
 */
async function renameDialog(segment) {
  const renamed = await openDialog(`Rename “${segment.name}”`, (close) => {
    const name = h('input', { name: 'name', value: segment.name, required: true, maxlength: '80' });
    const save = h('button', { type: 'submit', class: 'button' }, 'Rename');
    const form = h('form', { class: 'stack', novalidate: true }, formError(), field({ label: 'Name', control: name }), h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'button secondary', onclick: () => close() }, 'Cancel'), save));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearFormErrors(form);
      save.disabled = true;
      try {
        const updated = await api.segments.update(segment.id, { name: name.value });
        notify(`Renamed to “${updated.name}” (${plural(updated.matchCount, 'customer')}).`);
        close(true);
      } catch (error) {
        showFormError(form, error);
        save.disabled = false;
      }
    });
    queueMicrotask(() => name.select());
    return form;
  });
  return renamed === true;
}
