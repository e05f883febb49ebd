// @ts-check
// A segment's customers as CSV files for the tools that send: plain, or listmonk's subscriber import format.
import * as api from '../endpoints.js';
import { h } from '../dom.js';
import { downloadButton } from '../download.js';

/** @typedef {import('../types.js').Segment} Segment */

/**
 * "Export CSV" and "Export for listmonk": the segment's customers matching its saved conditions now.
 * @param {Segment} segment
 * @param {string} className
 */
export function exportButtons(segment, className) {
  const of = h('span', { class: 'visually-hidden' }, ` of ${segment.name}`);
  return [
    downloadButton({ label: ['Export CSV', of], class: className, fetchFile: () => api.segments.customersCsv(segment.id, 'plain') }),
    downloadButton({ label: ['Export for listmonk', of.cloneNode(true)], class: className, fetchFile: () => api.segments.customersCsv(segment.id, 'listmonk') }),
  ];
}
