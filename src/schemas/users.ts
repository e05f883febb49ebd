// Schemas of users, sessions and the auth and user-management requests.
import * as v from 'valibot';
import { ROLES } from '../domain/auth-user.ts';
import { Email, MAX_COUNTER, Timestamp, TrimmedText } from './common.ts';

export const Password = v.pipe(
  v.string(),
  v.minLength(8, 'Must be at least 8 characters long.'),
  v.maxLength(128, 'Must be at most 128 characters long.'),
);

export const Role = v.picklist(ROLES, `Must be one of ${ROLES.join(', ')}.`);

export const User = v.strictObject({
  id: v.pipe(v.string(), v.minLength(1)),
  fullName: v.pipe(v.string(), v.minLength(1)),
  email: Email,
  role: Role,
  isActive: v.boolean(),
  createdAt: Timestamp,
});

export const Session = v.strictObject({
  accessToken: v.pipe(v.string(), v.minLength(1)),
  refreshToken: v.pipe(v.string(), v.minLength(1)),
  expiresIn: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_COUNTER), v.description('access token lifetime in seconds')),
  user: User,
});

export const SignInRequest = v.object({ email: Email, password: Password });

export const RefreshTokenRequest = v.object({ refreshToken: v.pipe(v.string(), v.minLength(1)) });

export const UserList = v.array(User);

export const NewUserRequest = v.object({
  email: Email,
  fullName: TrimmedText(1, 120),
  role: Role,
  password: Password,
});

export const UserChangesRequest = v.object({
  fullName: v.optional(TrimmedText(1, 120)),
  role: v.optional(Role),
  isActive: v.optional(v.boolean()),
  password: v.optional(Password),
});
