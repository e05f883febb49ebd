// Password hashing with scrypt; parameters travel inside each hash so they can be raised later.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** The scrypt cost of new hashes: N (a power of two), block size r and parallelism p. */
export interface PasswordCost {
  N: number;
  r: number;
  p: number;
}

/** The production cost: 32 MiB of memory and three lanes, about 0.2 s of one core per hash. */
export const PRODUCTION_PASSWORD_COST: PasswordCost = { N: 2 ** 15, r: 8, p: 3 };
const KEY_LENGTH = 64;
const SALT_LENGTH = 16;

function derive(password: string, salt: Buffer, params: PasswordCost): Promise<Buffer> {
  const maxmem = 256 * params.N * params.r + 16 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { ...params, maxmem }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

function format(params: PasswordCost, salt: Buffer, key: Buffer): string {
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Returns a new `scrypt$N$r$p$salt$key` hash of the password, at the production cost unless told otherwise. */
export async function hashPassword(password: string, cost: PasswordCost = PRODUCTION_PASSWORD_COST): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  return format(cost, salt, await derive(password, salt, cost));
}

/** Returns a well-formed hash no password matches: verifying against it costs what checking a real hash of `cost` costs. */
export function dummyPasswordHash(cost: PasswordCost = PRODUCTION_PASSWORD_COST): string {
  return format(cost, randomBytes(SALT_LENGTH), Buffer.alloc(KEY_LENGTH));
}

/** Returns whether the password matches the stored hash, at the cost stored in it; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (scheme !== 'scrypt' || !salt || !key || !Object.values(params).every(Number.isSafeInteger)) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), params);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
