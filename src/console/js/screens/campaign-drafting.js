// @ts-check
// Drafting that iterates, on a draft's screen: the copy revised on an instruction (the usual ones as buttons, or in the
// marketer's words), 2 or 3 variants side by side as they would look on the channel, any of which can be used, and
// every version the copy has had, any of which can be restored. One request at a time: while the model writes, every
// action here is disabled and the panel says what it is waiting for.
import * as api from '../endpoints.js';
import { channelPreview, limitList } from '../channel-preview.js';
import { h, loading, randomId, replace, uid } from '../dom.js';
import { characterCounter, field, formError } from '../forms.js';
import { CHANNEL_NAMES, dateTime, VERSION_SOURCE_NAMES } from '../format.js';
import { clearFormErrors, errorBox, showFormError } from '../problems.js';
import * as session from '../session.js';

/** @typedef {import('../types.js').Campaign} Campaign */
/** @typedef {import('../types.js').CampaignVersion} CampaignVersion */

/** Instructions offered as buttons; the local generator understands each of them. */
const QUICK = ['Shorter', 'More urgent', 'Friendlier'];
/** The service's bounds on an instruction, in characters after trimming. */
const INSTRUCTION = { min: 3, max: 300 };

/**
 * The drafting parts of a draft's screen: `variants` goes across the page (empty until variants are asked for), the
 * revise and versions cards beside the preview. `changed` is called once the copy changed (revised, or a version
 * restored) with a sentence saying so, and resolves once the screen shows the campaign again: until then every action
 * here stays disabled.
 * @param {Campaign} campaign
 * @param {{ signal: AbortSignal, events: import('../types.js').CampaignEvent[], changed: (said: string) => Promise<void> }} options
 */
export function draftingPanel(campaign, { signal, events, changed }) {
  const lock = oneAtATime();
  const who = namesOf(events);

  // Revise, and ask for variants, from one instruction box.
  const instruction = h('textarea', { name: 'instruction', rows: '2', maxlength: String(INSTRUCTION.max + 100), placeholder: 'e.g. mention free delivery' });
  const counter = characterCounter(instruction, INSTRUCTION.max, INSTRUCTION.min);
  const reviseButton = h('button', { type: 'submit', class: 'button' }, 'Revise');
  const quick = QUICK.map((label) => h('button', { type: 'button', class: 'button secondary small', onclick: () => revise(label.toLowerCase()) }, label));
  const variantButtons = [2, 3].map((n) => h('button', { type: 'button', class: 'button secondary small', onclick: () => askVariants(n) }, `Write ${n} variants`));
  const pending = h('p', { class: 'pending', role: 'status', hidden: true });
  const said = h('p', { class: 'muted small', role: 'status' });
  const form = h(
    'form',
    { class: 'stack', novalidate: true },
    formError(),
    h('div', { class: 'quick-instructions', role: 'group', 'aria-label': 'Quick changes' }, quick),
    field({
      label: 'Instruction',
      control: instruction,
      hint: h('span', { class: 'hint-row' }, h('span', {}, 'In plain words: “more professional”, “mention the 20% code”, “no emoji”.'), counter),
    }),
    h('div', { class: 'form-actions start' }, reviseButton),
    h('div', { class: 'variant-actions' }, h('p', { class: 'hint' }, 'Or compare alternatives side by side; they follow the instruction above when there is one, and none is used until you choose it.'), h('div', { class: 'inline-controls' }, variantButtons)),
    pending,
    said,
  );
  lock.add(instruction, reviseButton, ...quick, ...variantButtons);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    revise(instruction.value);
  });
  const reviseCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'revise-title' },
    h('h2', { id: 'revise-title' }, 'Revise the draft'),
    h('p', { class: 'hint' }, 'The rewrite becomes the current copy; earlier ones stay under Versions. Save your own edits first: a revision starts from the saved copy.'),
    form,
  );

  // Variants, shown across the page; and the versions list.
  const variantsArea = h('section', { class: 'card variants', 'aria-labelledby': 'variants-title', hidden: true });
  const versionsError = formError();
  const versionsList = h('div', {}, loading('Loading versions…'));
  const versionsCard = h('section', { class: 'card', 'aria-labelledby': 'versions-title' }, h('h2', { id: 'versions-title' }, 'Versions'), versionsError, versionsList);

  /** A retried request reuses its Idempotency-Key, so an answer lost on the way back is not written twice. */
  let attempt = /** @type {{ what: string, key: string } | null} */ (null);
  const keyFor = (/** @type {string} */ what) => {
    if (attempt?.what !== what) attempt = { what, key: randomId() };
    return attempt.key;
  };

  /** @param {string} text */
  const revise = (text) =>
    lock.run(form, pending, 'The model is rewriting the draft. This can take a few seconds…', async () => {
      clearFormErrors(form);
      said.textContent = '';
      try {
        await api.campaigns.revise(campaign.id, text, keyFor(`revise ${text}`), { signal });
        attempt = null;
        await changed(`Revised: ${text.trim()}.`);
      } catch (error) {
        showFormError(form, error);
      }
    });

  /** @param {number} n */
  const askVariants = (n) =>
    lock.run(form, pending, `The model is writing ${n} variants. This can take a few seconds…`, async () => {
      clearFormErrors(form);
      said.textContent = '';
      const text = instruction.value.trim();
      try {
        const { variants } = await api.campaigns.variants(campaign.id, text ? { count: n, instruction: text } : { count: n }, keyFor(`variants ${n} ${text}`), { signal });
        attempt = null;
        showVariants(variants);
        said.textContent = `${variants.length} variants are shown above the preview.`;
        void loadVersions();
      } catch (error) {
        showFormError(form, error);
      }
    });

  /**
   * Makes a version (or a variant) the current copy.
   * @param {number} version
   * @param {HTMLElement} place where a failure is shown: a box with a `.form-error`
   * @param {HTMLElement} pendingLine
   */
  const restore = (version, place, pendingLine) =>
    lock.run(place, pendingLine, `Making version ${version} the current copy…`, async () => {
      clearFormErrors(place);
      try {
        await api.campaigns.restore(campaign.id, version, { signal });
        await changed(`Version ${version} is the current copy now.`);
      } catch (error) {
        showFormError(place, error);
      }
    });

  /** @param {CampaignVersion[]} variants */
  const showVariants = (variants) => {
    const pendingLine = h('p', { class: 'pending', role: 'status', hidden: true });
    const hide = h('button', { type: 'button', class: 'link-button', onclick: () => (variantsArea.hidden = true) }, 'Hide variants');
    replace(
      variantsArea,
      h('div', { class: 'card-head' }, h('h2', { id: 'variants-title', tabindex: '-1' }, `Variants on ${CHANNEL_NAMES[campaign.channel]}`), hide),
      h('p', { class: 'hint' }, `${variants.length} alternatives to the current copy, as they would look. Each is kept under Versions; “Use this one” makes it the current copy.`),
      variants.some((v) => v.model === 'local') ? builtInNote('these variants') : null,
      formError(),
      h(
        'ol',
        { class: 'variant-grid' },
        variants.map((variant) => {
          const headingId = uid('variant');
          const use = h('button', { type: 'button', class: 'button', 'aria-describedby': headingId, onclick: () => restore(variant.version, variantsArea, pendingLine) }, 'Use this one');
          lock.add(use);
          return h(
            'li',
            { class: 'variant', 'data-version': variant.version },
            h('h3', { id: headingId }, `Version ${variant.version}`),
            channelPreview(campaign.channel, variant),
            limitList(campaign.channel, variant),
            h('div', { class: 'form-actions start' }, use),
          );
        }),
      ),
      pendingLine,
    );
    variantsArea.hidden = false;
    variantsArea.scrollIntoView({ block: 'start' });
    /** @type {HTMLElement} */ (variantsArea.querySelector('h2')).focus({ preventScroll: true });
  };

  const loadVersions = async () => {
    try {
      const versions = await api.campaigns.versions(campaign.id, { signal });
      replace(versionsList, versionList(versions));
    } catch (error) {
      replace(versionsList, errorBox(error));
    }
  };

  /** @param {CampaignVersion[]} versions */
  const versionList = (versions) => {
    const newestFirst = versions.slice().reverse();
    // The current copy is the newest version that is not a variant: every other kind of version is made current.
    const current = newestFirst.find((v) => v.source !== 'variant')?.version;
    return h('ol', { class: 'versions', reversed: true }, newestFirst.map((version) => versionItem(version, version.version === current, versions)));
  };

  /**
   * @param {CampaignVersion} version
   * @param {boolean} isCurrent
   * @param {CampaignVersion[]} versions all of them, to name the one a restored copy came from
   */
  const versionItem = (version, isCurrent, versions) => {
    const headingId = uid('version');
    const pendingLine = h('p', { class: 'pending', role: 'status', hidden: true });
    const restoreButton = isCurrent ? null : h('button', { type: 'button', class: 'button secondary small', 'aria-describedby': headingId, onclick: () => restore(version.version, versionsCard, pendingLine) }, 'Restore');
    if (restoreButton) lock.add(restoreButton);
    const copyOf = version.source === 'restored' ? versions.find((v) => v.version < version.version && sameCopy(v, version)) : undefined;
    const by = version.createdBy === session.user()?.id ? 'you' : who.get(version.createdBy);
    const writer = version.model ? (version.model === 'local' ? 'built-in generator' : version.model) : '';
    return h(
      'li',
      { class: isCurrent ? 'version current' : 'version', 'data-version': version.version, 'data-source': version.source },
      h(
        'div',
        { class: 'version-head' },
        h(
          'p',
          { id: headingId },
          h('strong', {}, `Version ${version.version}`),
          ' ',
          h('span', { class: `badge source-${version.source}` }, VERSION_SOURCE_NAMES[version.source]),
          copyOf ? h('span', { class: 'muted small' }, ` from version ${copyOf.version}`) : null,
          isCurrent ? h('span', { class: 'badge current-badge' }, 'Current') : null,
        ),
        restoreButton,
      ),
      h('p', { class: 'version-title' }, version.title),
      version.instruction ? h('p', { class: 'version-instruction' }, `“${version.instruction}”`) : null,
      h('p', { class: 'muted small' }, h('time', { datetime: version.createdAt }, dateTime(version.createdAt)), by ? ` · by ${by}` : '', writer ? ` · ${writer}` : ''),
      pendingLine,
    );
  };

  void loadVersions();
  return { variants: variantsArea, revise: reviseCard, versions: versionsCard };
}

/**
 * Says that the built-in generator wrote the copy, from its own stock phrases, and how to get better copy. Shown
 * wherever its drafts are.
 */
export function builtInNote(what = 'this draft') {
  return h(
    'p',
    { class: 'hint built-in-note', 'data-writer': 'local' },
    `The built-in generator wrote ${what} from its own stock phrases, without a model. Connecting a model writes better copy: see “Model providers” in the README.`,
  );
}

/**
 * Whether two versions hold the same copy.
 * @param {CampaignVersion} a
 * @param {CampaignVersion} b
 */
function sameCopy(a, b) {
  return a.title === b.title && a.message === b.message && a.callToAction === b.callToAction;
}

/**
 * The names the trail gives user ids (whoever drafted, revised or moved the campaign).
 * @param {import('../types.js').CampaignEvent[]} events
 */
function namesOf(events) {
  /** @type {Map<string, string>} */
  const names = new Map();
  for (const event of events) if (event.userName) names.set(event.userId, event.userName);
  return names;
}

/**
 * One request at a time across the panel: while one runs, every control added is disabled, the place it was asked
 * from is marked busy and its pending line says what is awaited.
 */
function oneAtATime() {
  /** @type {Set<HTMLButtonElement | HTMLTextAreaElement>} */
  const controls = new Set();
  let busy = false;
  const settle = () => {
    for (const control of controls) {
      if (!control.isConnected) controls.delete(control);
      else if (control instanceof HTMLTextAreaElement) control.readOnly = busy;
      else control.disabled = busy;
    }
  };
  return {
    /** @param {...(HTMLButtonElement | HTMLTextAreaElement)} added */
    add(...added) {
      for (const control of added) controls.add(control);
      if (busy) settle();
    },
    /**
     * Runs `task` unless another is running.
     * @param {HTMLElement} place
     * @param {HTMLElement} pending
     * @param {string} text
     * @param {() => Promise<void>} task
     */
    async run(place, pending, text, task) {
      if (busy) return;
      busy = true;
      settle();
      replace(pending, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
      pending.hidden = false;
      place.setAttribute('aria-busy', 'true');
      try {
        await task();
      } finally {
        busy = false;
        settle();
        pending.hidden = true;
        pending.replaceChildren();
        place.removeAttribute('aria-busy');
      }
    },
  };
}
