// @ts-check
// One typed function per API operation the console uses; screens call these, never raw paths.
import { request, send } from './api.js';
import { fileOf } from './download.js';

/** @typedef {{ signal?: AbortSignal }} Opts */
/** @typedef {import('./types.js').ExportFormat} ExportFormat */
/** @typedef {import('./download.js').DownloadedFile} DownloadedFile */

const id = encodeURIComponent;

export const customers = {
  /** @param {import('./types.js').CustomerQuery} query @param {Opts} [o] @returns {Promise<import('./types.js').CustomerPage>} */
  list: (query, o = {}) => request('GET', '/v1/customers', { query, ...o }),
  /** @param {import('./types.js').CustomerInput} body @returns {Promise<import('./types.js').Customer>} */
  create: (body) => request('POST', '/v1/customers', { body }),
  /** @param {string} customerId @param {Partial<import('./types.js').CustomerInput>} body @returns {Promise<import('./types.js').Customer>} */
  update: (customerId, body) => request('PATCH', `/v1/customers/${id(customerId)}`, { body }),
  /** @param {string} customerId @returns {Promise<null>} */
  remove: (customerId) => request('DELETE', `/v1/customers/${id(customerId)}`),
  /**
   * @param {File} file @param {{ columns?: Record<string, string | null>, onExisting?: 'skip' | 'update' }} how an empty mapping and `skip` are left out
   * @param {Opts} [o] @returns {Promise<import('./types.js').ImportJob>}
   */
  uploadImport: (file, how = {}, o = {}) =>
    request('POST', '/v1/customers/imports', { file: new Blob([file], { type: 'text/csv' }), query: { fileName: file.name.slice(0, 255), ...importQuery(how) }, ...o }),
  /**
   * The preview reads 64 KB: one byte more tells it a record at the end was cut.
   * @param {File} file @param {{ columns?: Record<string, string | null>, onExisting?: 'skip' | 'update' }} how
   * @param {Opts} [o] @returns {Promise<import('./types.js').ImportPreview>}
   */
  previewImport: (file, how = {}, o = {}) =>
    request('POST', '/v1/customers/imports/preview', { file: new Blob([file.slice(0, 64 * 1024 + 1)], { type: 'text/csv' }), query: importQuery(how), ...o }),
  /** @param {string} jobId @param {Opts} [o] @returns {Promise<import('./types.js').ImportJob>} */
  importJob: (jobId, o = {}) => request('GET', `/v1/customers/imports/${id(jobId)}`, o),
  /** @param {string} jobId @returns {Promise<Blob>} the skipped rows as CSV */
  importFailures: async (jobId) => (await send('GET', `/v1/customers/imports/${id(jobId)}/failures.csv`, { headers: { accept: 'text/csv' } })).blob(),
  /** @param {Opts} [o] @returns {Promise<import('./types.js').Kpis>} */
  kpis: (o = {}) => request('GET', '/v1/customers/kpis', o),
  /** @param {number} months @param {Opts} [o] @returns {Promise<import('./types.js').TrendPoint[]>} */
  trend: (months, o = {}) => request('GET', '/v1/customers/trend', { query: { months }, ...o }),
  /** @param {Opts} [o] @returns {Promise<import('./types.js').Health>} */
  health: (o = {}) => request('GET', '/v1/customers/health', o),
  /** @param {number} limit @param {Opts} [o] @returns {Promise<import('./types.js').TopCustomers>} */
  top: (limit, o = {}) => request('GET', '/v1/customers/top', { query: { limit }, ...o }),
};

export const segments = {
  /** @param {Opts} [o] @returns {Promise<import('./types.js').Segment[]>} */
  list: (o = {}) => request('GET', '/v1/segments', o),
  /** @param {string} segmentId @param {Opts} [o] @returns {Promise<import('./types.js').Segment>} */
  get: (segmentId, o = {}) => request('GET', `/v1/segments/${id(segmentId)}`, o),
  /** @param {import('./types.js').Condition[]} conditions @param {Opts} [o] @returns {Promise<import('./types.js').Preview>} */
  preview: (conditions, o = {}) => request('POST', '/v1/segments/preview', { body: { conditions }, ...o }),
  /** @param {string} description @param {Opts} [o] @returns {Promise<import('./types.js').SegmentDraft>} conditions read from words; nothing stored */
  draft: (description, o = {}) => request('POST', '/v1/segments/draft', { body: { description }, ...o }),
  /** @param {{ name: string, conditions: import('./types.js').Condition[] }} body @returns {Promise<import('./types.js').Segment>} */
  create: (body) => request('POST', '/v1/segments', { body }),
  /** @param {string} segmentId @param {{ name?: string, conditions?: import('./types.js').Condition[] }} body @returns {Promise<import('./types.js').Segment>} */
  update: (segmentId, body) => request('PATCH', `/v1/segments/${id(segmentId)}`, { body }),
  /** @param {string} segmentId @returns {Promise<null>} */
  remove: (segmentId) => request('DELETE', `/v1/segments/${id(segmentId)}`),
  /** @param {string} segmentId @param {ExportFormat} format @returns {Promise<DownloadedFile>} its customers matching now, as CSV */
  customersCsv: async (segmentId, format) => fileOf(await send('GET', `/v1/segments/${id(segmentId)}/customers.csv`, { query: { format }, headers: { accept: 'text/csv' } }), 'segment-customers.csv'),
};

export const campaigns = {
  /** @param {import('./types.js').CampaignQuery} query @param {Opts} [o] @returns {Promise<import('./types.js').CampaignPage>} */
  list: (query, o = {}) => request('GET', '/v1/campaigns', { query, ...o }),
  /** @param {string} campaignId @param {Opts} [o] @returns {Promise<import('./types.js').Campaign>} */
  get: (campaignId, o = {}) => request('GET', `/v1/campaigns/${id(campaignId)}`, o),
  /**
   * A retry with the same key and body is answered from the first success instead of drafting again.
   * @param {import('./types.js').GenerateRequest} body @param {string} idempotencyKey @param {Opts} [o] @returns {Promise<import('./types.js').Campaign>}
   */
  generate: (body, idempotencyKey, o = {}) => request('POST', '/v1/campaigns/generate', { body, headers: { 'idempotency-key': idempotencyKey }, ...o }),
  /** @param {string} campaignId @param {Partial<import('./types.js').CampaignCopy>} body @returns {Promise<import('./types.js').Campaign>} */
  update: (campaignId, body) => request('PATCH', `/v1/campaigns/${id(campaignId)}`, { body }),
  /** @param {string} campaignId @returns {Promise<null>} */
  remove: (campaignId) => request('DELETE', `/v1/campaigns/${id(campaignId)}`),
  /** @param {string} campaignId @param {import('./types.js').CampaignStatus} status @param {string} [note] @returns {Promise<import('./types.js').Campaign>} */
  move: (campaignId, status, note) => request('PATCH', `/v1/campaigns/${id(campaignId)}/status`, { body: note ? { status, note } : { status } }),
  /** @param {string} campaignId @param {Opts} [o] @returns {Promise<import('./types.js').CampaignEvent[]>} */
  events: (campaignId, o = {}) => request('GET', `/v1/campaigns/${id(campaignId)}/events`, o),
  /** @param {string} campaignId @param {Opts} [o] @returns {Promise<import('./types.js').CampaignAudience>} 409 before approval */
  audience: (campaignId, o = {}) => request('GET', `/v1/campaigns/${id(campaignId)}/audience`, o),
  /** @param {string} campaignId @param {ExportFormat} format @returns {Promise<DownloadedFile>} the audience frozen at approval, as CSV */
  audienceCsv: async (campaignId, format) =>
    fileOf(await send('GET', `/v1/campaigns/${id(campaignId)}/audience.csv`, { query: { format }, headers: { accept: 'text/csv' } }), `campaign-${campaignId}-audience.csv`),
  /**
   * Rewrites a draft as the instruction says; the new copy is current. A retry with the same key and body is answered
   * from the first success instead of revising twice.
   * @param {string} campaignId @param {string} instruction @param {string} idempotencyKey @param {Opts} [o] @returns {Promise<import('./types.js').Campaign>}
   */
  revise: (campaignId, instruction, idempotencyKey, o = {}) =>
    request('POST', `/v1/campaigns/${id(campaignId)}/revise`, { body: { instruction }, headers: { 'idempotency-key': idempotencyKey }, ...o }),
  /**
   * Writes 2 or 3 alternatives, stored as versions and not made current.
   * @param {string} campaignId @param {import('./types.js').VariantsRequest} body @param {string} idempotencyKey @param {Opts} [o] @returns {Promise<import('./types.js').VariantList>}
   */
  variants: (campaignId, body, idempotencyKey, o = {}) => request('POST', `/v1/campaigns/${id(campaignId)}/variants`, { body, headers: { 'idempotency-key': idempotencyKey }, ...o }),
  /** @param {string} campaignId @param {Opts} [o] @returns {Promise<import('./types.js').CampaignVersion[]>} oldest first */
  versions: (campaignId, o = {}) => request('GET', `/v1/campaigns/${id(campaignId)}/versions`, o),
  /** @param {string} campaignId @param {number} version @param {Opts} [o] @returns {Promise<import('./types.js').Campaign>} that copy made current, as a new version */
  restore: (campaignId, version, o = {}) => request('POST', `/v1/campaigns/${id(campaignId)}/versions/${version}/restore`, o),
};

export const users = {
  /** @param {Opts} [o] @returns {Promise<import('./types.js').User[]>} */
  list: (o = {}) => request('GET', '/v1/users', o),
  /** @param {import('./types.js').NewUser} body @returns {Promise<import('./types.js').User>} */
  create: (body) => request('POST', '/v1/users', { body }),
  /** @param {string} userId @param {import('./types.js').UserChanges} body @returns {Promise<import('./types.js').User>} */
  update: (userId, body) => request('PATCH', `/v1/users/${id(userId)}`, { body }),
};

export const webhooks = {
  /** @param {Opts} [o] @returns {Promise<import('./types.js').Webhook[]>} */
  list: (o = {}) => request('GET', '/v1/webhooks', o),
  /** @param {string} webhookId @param {Opts} [o] @returns {Promise<import('./types.js').Webhook>} */
  get: (webhookId, o = {}) => request('GET', `/v1/webhooks/${id(webhookId)}`, o),
  /** @param {import('./types.js').NewWebhook} body @returns {Promise<import('./types.js').WebhookWithSecret>} the only answer that shows the secret, with rotate's */
  create: (body) => request('POST', '/v1/webhooks', { body }),
  /** @param {string} webhookId @param {import('./types.js').WebhookChanges} body @returns {Promise<import('./types.js').Webhook>} */
  update: (webhookId, body) => request('PATCH', `/v1/webhooks/${id(webhookId)}`, { body }),
  /** @param {string} webhookId @returns {Promise<null>} */
  remove: (webhookId) => request('DELETE', `/v1/webhooks/${id(webhookId)}`),
  /** @param {string} webhookId @returns {Promise<import('./types.js').WebhookWithSecret>} */
  rotateSecret: (webhookId) => request('POST', `/v1/webhooks/${id(webhookId)}/rotate-secret`),
  /** @param {string} webhookId @returns {Promise<import('./types.js').Delivery>} the test's delivery after its first attempt */
  test: (webhookId) => request('POST', `/v1/webhooks/${id(webhookId)}/test`),
  /** @param {string} webhookId @param {{ page?: number, limit?: number }} query @param {Opts} [o] @returns {Promise<import('./types.js').DeliveryPage>} newest first */
  deliveries: (webhookId, query, o = {}) => request('GET', `/v1/webhooks/${id(webhookId)}/deliveries`, { query, ...o }),
};

export const chat = {
  /** @param {Opts} [o] @returns {Promise<import('./types.js').ThreadPage>} */
  threads: (o = {}) => request('GET', '/v1/chat/threads', { query: { limit: 100 }, ...o }),
  /** @param {string} [title] @returns {Promise<import('./types.js').Thread>} */
  createThread: (title) => request('POST', '/v1/chat/threads', { body: title ? { title } : {} }),
  /** @param {string} threadId @param {Opts} [o] @returns {Promise<import('./types.js').Thread>} */
  thread: (threadId, o = {}) => request('GET', `/v1/chat/threads/${id(threadId)}`, o),
  /** @param {string} threadId @returns {Promise<null>} */
  deleteThread: (threadId) => request('DELETE', `/v1/chat/threads/${id(threadId)}`),
  /** @param {string} threadId @param {Opts} [o] @returns {Promise<import('./types.js').Message[]>} */
  messages: (threadId, o = {}) => request('GET', `/v1/chat/threads/${id(threadId)}/messages`, o),
  /**
   * Asks the assistant; resolves with the streaming response once the service has accepted the question.
   * @param {string} threadId @param {string} content @param {AbortSignal} signal @returns {Promise<Response>}
   */
  stream: (threadId, content, signal) =>
    send('POST', `/v1/chat/threads/${id(threadId)}/messages/stream`, { body: { content }, headers: { accept: 'text/event-stream' }, signal }),
  /**
   * Runs a proposal of the assistant as the user: saves the segment or drafts the campaign (which calls the model).
   * Confirming again answers the same and makes nothing more.
   * @param {string} threadId @param {string} actionId @returns {Promise<import('./types.js').ConfirmReply>}
   */
  confirmAction: (threadId, actionId) => request('POST', `/v1/chat/threads/${id(threadId)}/actions/${id(actionId)}/confirm`),
  /** @param {string} threadId @param {string} actionId @returns {Promise<import('./types.js').RejectReply>} the proposal, now dismissed */
  rejectAction: (threadId, actionId) => request('POST', `/v1/chat/threads/${id(threadId)}/actions/${id(actionId)}/reject`),
};

/**
 * The query of an upload or preview: the mapping when it names a column, onExisting when it updates.
 * @param {{ columns?: Record<string, string | null>, onExisting?: 'skip' | 'update' }} how
 */
function importQuery({ columns, onExisting }) {
  return { columns: columns && Object.keys(columns).length ? JSON.stringify(columns) : undefined, onExisting: onExisting === 'update' ? 'update' : undefined };
}
