// Signing secrets and signatures of Standard Webhooks (https://www.standardwebhooks.com).
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** Returns a new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** Returns `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64-decoded part after `whsec_`. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** Returns the `webhook-*` headers of one attempt: one signature per secret, space-separated, the current one first. */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => sign(secret, id, timestamp, body)).join(' '),
  };
}
