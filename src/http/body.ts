// Reading a JSON request body within a size limit.
import type { IncomingMessage } from 'node:http';
import { AppError, invalidField } from '../domain/errors.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Returns the parsed JSON body, or `undefined` when the request has none.
 * Throws `payload_too_large` over the limit, `unsupported_media_type` for a body that is not JSON,
 * and `validation_failed` on `body` for malformed JSON.
 */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(req, limit);

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(req, limit);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;

  const contentType = req.headers['content-type'] ?? '';
  if (!JSON_MEDIA_TYPE.test(contentType)) {
    throw new AppError('unsupported_media_type', 'Request bodies must be JSON, sent with Content-Type: application/json.');
  }
  const text = Buffer.concat(chunks, size).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidField('body', 'Malformed JSON.');
  }
}

/**
 * Throws `unsupported_media_type` unless the Content-Type names `mediaType` (parameters such as a charset may
 * follow); the body is discarded unread, so the client can read the answer.
 */
export function checkMediaType(req: IncomingMessage, mediaType: string): void {
  const declared = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (declared === mediaType) return;
  req.resume();
  throw new AppError('unsupported_media_type', `This endpoint takes a ${mediaType} body, sent with Content-Type: ${mediaType}.`);
}

function tooLarge(req: IncomingMessage, limit: number): AppError {
  req.resume(); // discard the rest so the client can read the answer; the connection closes after it
  return new AppError('payload_too_large', `Request bodies are limited to ${limit} bytes.`);
}
