// @ts-check
// The assistant: placeholder until the chat API is merged.
import { emptyState, pageHeader } from '../dom.js';

/** @type {import('../types.js').Screen} */
export function assistantScreen(root) {
  document.title = 'Assistant · Campaign console';
  root.append(pageHeader('Assistant'), emptyState('Not available yet', 'The assistant arrives with the chat API.'));
}
