// @ts-check
// The assistant: your threads, their messages, and a reply that appears as it streams, with a stop button and
// errors shown where the reply would have been; what the assistant proposes to do comes as cards to confirm or dismiss.
import * as api from '../endpoints.js';
import { ApiError, isAbort } from '../api.js';
import { emptyState, h, loading, pageHeader, replace } from '../dom.js';
import { confirmAction, notify } from '../forms.js';
import { dateTime } from '../format.js';
import { describe, errorBox } from '../problems.js';
import { navigate } from '../router.js';
import { readEvents } from '../sse.js';
import { actionCard, actionCards } from './assistant-actions.js';

/** @typedef {import('../types.js').Thread} Thread */
/** @typedef {import('../types.js').Message} Message */
/** @typedef {import('../types.js').StreamEvent} StreamEvent */

const MAX_LENGTH = 8000;
const SUGGESTIONS = ['How healthy is our customer base?', 'Which segment should we win back first?', 'What changed in the last three months?'];

/** @type {import('../types.js').Screen} */
export function assistantScreen(root, { params, signal }) {
  document.title = 'Assistant · Campaign console';
  /** @type {string | undefined} */
  let threadId = params.id;
  /** The reply being streamed, if any. @type {AbortController | undefined} */
  let streaming;

  const threadList = h('ul', { class: 'thread-list' });
  const threadsArea = h('div', {}, loading('Loading conversations…'));
  const title = h('h2', { id: 'conversation-title' }, 'New conversation');
  const deleteButton = h('button', { type: 'button', class: 'link-button danger', hidden: true }, 'Delete conversation');
  const messages = h('ol', { class: 'messages', 'aria-labelledby': 'conversation-title' });
  const status = h('p', { class: 'visually-hidden', role: 'status' });
  const input = h('textarea', { id: 'chat-input', name: 'content', rows: '2', maxlength: String(MAX_LENGTH), placeholder: 'Ask about your customers, segments or campaigns…' });
  const sendButton = h('button', { type: 'submit', class: 'button' }, 'Send');
  const stopButton = h('button', { type: 'button', class: 'button secondary', hidden: true }, 'Stop');
  const composer = h(
    'form',
    { class: 'composer', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'chat-input', class: 'visually-hidden' }, 'Message'), input, h('p', { class: 'hint' }, 'Enter sends; Shift+Enter starts a new line.')),
    h('div', { class: 'inline-controls' }, stopButton, sendButton),
  );
  const newButton = h('a', { href: '/assistant', class: 'button secondary' }, 'New conversation');

  root.append(
    pageHeader('Assistant', 'A marketing analyst that knows your live numbers and segments.', newButton),
    h(
      'div',
      { class: 'assistant-layout' },
      h('nav', { class: 'threads', 'aria-label': 'Conversations' }, threadsArea),
      h('section', { class: 'card conversation', 'aria-labelledby': 'conversation-title' }, h('div', { class: 'card-head' }, title, deleteButton), messages, composer),
    ),
    status,
  );

  const loadThreads = async () => {
    try {
      const page = await api.chat.threads({ signal });
      replace(threadList, page.items.map((t) => h('li', {}, h('a', { href: `/assistant/${encodeURIComponent(t.id)}`, 'aria-current': t.id === threadId ? 'page' : false, title: `${t.title} (${dateTime(t.updatedAt)})` }, t.title))));
      replace(threadsArea, page.items.length ? threadList : h('p', { class: 'muted small' }, 'No conversations yet.'));
      const current = page.items.find((t) => t.id === threadId);
      if (current) title.textContent = current.title;
    } catch (error) {
      replace(threadsArea, errorBox(error));
    }
  };

  const showThread = async () => {
    streaming?.abort();
    deleteButton.hidden = !threadId;
    for (const link of threadList.querySelectorAll('a')) {
      if (link.getAttribute('href') === `/assistant/${encodeURIComponent(threadId ?? '')}`) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    if (!threadId) {
      title.textContent = 'New conversation';
      replace(messages, h('li', { class: 'suggestions' }, emptyState('Ask anything about your customers', 'For example:', h('div', { class: 'inline-controls' }, SUGGESTIONS.map((text) => h('button', { type: 'button', class: 'button secondary small', onclick: () => ask(text) }, text))))));
      return;
    }
    replace(messages, h('li', {}, loading('Loading messages…')));
    try {
      const [thread, list] = await Promise.all([api.chat.thread(threadId, { signal }), api.chat.messages(threadId, { signal })]);
      title.textContent = thread.title;
      const shown = list.map((m) => markCut(bubble(m.role, m.content, actionCards(thread.id, m.actions)), m.truncated));
      replace(messages, shown.length ? shown : h('li', { class: 'muted' }, 'No messages yet. Ask the first question below.'));
      messages.scrollTop = messages.scrollHeight;
    } catch (error) {
      replace(messages, h('li', {}, errorBox(error, h('a', { href: '/assistant' }, 'Start a new conversation'))));
      deleteButton.hidden = true;
    }
  };

  /**
   * Sends a question and shows the reply as it streams.
   * @param {string} text
   */
  const ask = async (text) => {
    const content = text.trim();
    if (!content || streaming) return;
    const controller = new AbortController();
    streaming = controller;
    const stop = AbortSignal.any([signal, controller.signal]);
    setBusy(true);
    if (!threadId) {
      try {
        const thread = await api.chat.createThread();
        threadId = thread.id;
        navigate(`/assistant/${encodeURIComponent(thread.id)}`, { replace: true });
        messages.replaceChildren();
        deleteButton.hidden = false;
      } catch (error) {
        streaming = undefined;
        setBusy(false);
        messages.append(h('li', {}, errorBox(error)));
        return;
      }
    }
    messages.querySelector(':scope > .suggestions, :scope > .muted')?.remove();
    const question = bubble('user', content);
    const answer = bubble('assistant', '');
    const answerText = /** @type {HTMLElement} */ (answer.querySelector('.message-text'));
    // Proposals arrive before the reply is stored; their buttons wait for `done`, which brings them as stored.
    const proposals = h('div', { class: 'action-cards' });
    const thread = threadId;
    answer.classList.add('streaming');
    messages.append(question, answer);
    input.value = '';
    status.textContent = 'The assistant is replying…';
    let finished = false;
    try {
      const response = await api.chat.stream(threadId, content, stop);
      for await (const event of /** @type {AsyncGenerator<StreamEvent>} */ (readEvents(/** @type {ReadableStream<Uint8Array>} */ (response.body)))) {
        if (event.type === 'delta') {
          answerText.textContent += event.text;
          messages.scrollTop = messages.scrollHeight;
        } else if (event.type === 'action') {
          if (!proposals.isConnected) answerText.after(proposals);
          proposals.append(actionCard(thread, event.action, { ready: false }));
          messages.scrollTop = messages.scrollHeight;
        } else if (event.type === 'done') {
          answerText.textContent = event.assistantMessage.content;
          proposals.remove();
          const stored = actionCards(thread, event.assistantMessage.actions);
          if (stored) answerText.after(stored);
          markCut(answer, event.assistantMessage.truncated);
          messages.scrollTop = messages.scrollHeight;
          finished = true;
        } else if (event.type === 'error') {
          proposals.remove();
          fail(answer, describe(new ApiError({ status: 0, code: event.code, detail: event.message })), 'Nothing was saved for this reply. Ask again to retry.');
          finished = true;
        }
      }
      if (!finished) fail(answer, 'The reply was cut off before it finished.', 'Nothing was saved for this reply.');
      status.textContent = finished ? `Reply complete.${proposalsSaid(answer)}` : 'The reply was cut off.';
    } catch (error) {
      if (controller.signal.aborted && !signal.aborted) {
        note(answer, 'Stopped. This partial reply was not saved.');
        status.textContent = 'Stopped.';
      } else if (!isAbort(error)) {
        if (error instanceof ApiError && error.status !== 0) question.remove(); // refused before the question was stored
        if (error instanceof ApiError && error.code === 'validation_failed') input.value = content;
        fail(answer, describe(error), error instanceof ApiError && error.code === 'validation_failed' ? error.errors.map((e) => e.message).join(' ') : '');
        status.textContent = 'The reply failed.';
      }
    } finally {
      proposals.remove(); // the streamed cards: replaced by the stored ones on `done`, and nothing to confirm otherwise
      answer.classList.remove('streaming');
      if (streaming === controller) streaming = undefined;
      if (!signal.aborted) {
        setBusy(false);
        input.focus();
        void loadThreads();
      }
    }
  };

  /** @param {boolean} busy */
  const setBusy = (busy) => {
    sendButton.disabled = busy;
    stopButton.hidden = !busy;
    messages.setAttribute('aria-busy', String(busy));
    if (busy) stopButton.focus();
  };

  stopButton.addEventListener('click', () => streaming?.abort());
  composer.addEventListener('submit', (event) => {
    event.preventDefault();
    void ask(input.value);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
  deleteButton.addEventListener('click', async () => {
    if (!threadId) return;
    if (!(await confirmAction({ title: 'Delete conversation', text: `Delete “${title.textContent}” and all its messages?`, confirm: 'Delete', danger: true }))) return;
    try {
      await api.chat.deleteThread(threadId);
      notify('Conversation deleted.');
      navigate('/assistant');
    } catch (error) {
      notify(describe(error));
    }
  });
  signal.addEventListener('abort', () => streaming?.abort());

  void loadThreads();
  void showThread();
  return {
    update(_place, next) {
      if (next.id === threadId) return;
      threadId = next.id;
      void showThread();
      void loadThreads();
    },
  };
}

/**
 * @param {'user' | 'assistant'} role
 * @param {string} content
 * @param {HTMLElement | null} [cards] the reply's proposals
 */
function bubble(role, content, cards) {
  return h('li', { class: `message ${role}` }, h('span', { class: 'visually-hidden' }, role === 'user' ? 'You: ' : 'Assistant: '), h('span', { class: 'message-text' }, content), cards);
}

/**
 * What a finished reply asks of the user, for the status line.
 * @param {HTMLElement} answer
 */
function proposalsSaid(answer) {
  const n = answer.querySelectorAll('.action-card').length;
  return n === 0 ? '' : n === 1 ? ' It proposes something to confirm or dismiss.' : ` It proposes ${n} things to confirm or dismiss.`;
}

/**
 * Marks a reply the model had to stop at its token budget: it was saved, but it is not the whole answer.
 * @param {HTMLElement} item
 * @param {boolean | undefined} truncated
 * @returns {HTMLElement}
 */
function markCut(item, truncated) {
  if (!truncated) return item;
  item.classList.add('truncated');
  note(item, 'Cut short: the model reached its length limit (LLM_MAX_TOKENS) before finishing this reply.');
  return item;
}

/**
 * @param {HTMLElement} answer
 * @param {string} text
 */
function note(answer, text) {
  answer.append(h('span', { class: 'message-note' }, text));
}

/**
 * Shows a failure in place of the reply.
 * @param {HTMLElement} answer
 * @param {string} text
 * @param {string} detail
 */
function fail(answer, text, detail) {
  answer.classList.add('failed');
  answer.setAttribute('role', 'alert');
  answer.append(h('span', { class: 'message-note strong' }, text));
  if (detail) answer.append(h('span', { class: 'message-note' }, detail));
}
