// auth.signIn, auth.refresh, auth.signOut.
import type { Config } from '../config.ts';
import type { RefreshTokenRepository } from '../db/refresh-tokens.ts';
import type { User, UserRepository } from '../db/users.ts';
import type { AccessTokens } from '../domain/access-tokens.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { dummyPasswordHash, verifyPassword, type PasswordCost } from '../domain/passwords.ts';
import { operation, publicOperation } from '../http/operation.ts';
import { NullBody } from '../schemas/common.ts';
import { RefreshTokenRequest, Session, SignInRequest } from '../schemas/users.ts';

export interface AuthDeps {
  users: UserRepository;
  refreshTokens: RefreshTokenRepository;
  accessTokens: AccessTokens;
  config: Pick<Config, 'accessTokenTtlSeconds' | 'refreshTokenTtlSeconds'>;
  clock: Clock;
  /** The cost of new hashes, which the dummy hash for unknown emails matches. */
  passwordCost: PasswordCost;
}

/** Returns the three authentication operations. */
export function authOperations({ users, refreshTokens, accessTokens, config, clock, passwordCost }: AuthDeps) {
  const dummyHash = dummyPasswordHash(passwordCost);
  const session = (user: User, refreshToken: string, now: Date) => ({
    accessToken: accessTokens.issue(user, now),
    refreshToken,
    expiresIn: config.accessTokenTtlSeconds,
    user,
  });

  const signIn = publicOperation({
    operationId: 'auth.signIn',
    summary: 'Sign in with email and password; returns an access token and a single-use refresh token.',
    tag: 'auth',
    body: SignInRequest,
    response: Session,
    problems: ['invalid_credentials', 'unavailable'],
    async handle({ body }) {
      const found = await users.findCredentials(body.email);
      // Unknown emails are checked against a dummy hash so both cases take the same time.
      const matches = await verifyPassword(body.password, found?.passwordHash ?? dummyHash);
      if (!found || !matches || !found.user.isActive) {
        throw new AppError('invalid_credentials', 'The email or password is incorrect.');
      }
      const now = clock();
      return session(found.user, await refreshTokens.startFamily(found.user.id, now, config.refreshTokenTtlSeconds), now);
    },
  });

  const refresh = publicOperation({
    operationId: 'auth.refresh',
    summary: 'Exchange a refresh token for a new pair; the presented token cannot be used again.',
    tag: 'auth',
    body: RefreshTokenRequest,
    response: Session,
    problems: ['session_expired', 'unavailable'],
    async handle({ body }) {
      const now = clock();
      const exchange = await refreshTokens.exchangeToken(body.refreshToken, now, config.refreshTokenTtlSeconds);
      const user = exchange.ok ? await users.findUser(exchange.userId) : undefined;
      if (!exchange.ok || !user) throw new AppError('session_expired', 'The refresh token was already used, revoked or has expired; sign in again.');
      return session(user, exchange.refreshToken, now);
    },
  });

  const signOut = operation({
    operationId: 'auth.signOut',
    summary: "Revoke the given refresh token. The access token stays valid until it expires. Repeating is not an error.",
    tag: 'auth',
    body: RefreshTokenRequest,
    response: NullBody,
    async handle({ body, user }) {
      await refreshTokens.revokeToken(body.refreshToken, user.id, clock());
      return null;
    },
  });

  return { signIn, refresh, signOut };
}
