// The signed-in user and the admins' user management.
import type { UserRepository } from '../db/users.ts';
import type { Clock } from '../domain/clock.ts';
import { AppError } from '../domain/errors.ts';
import { hashPassword, type PasswordCost } from '../domain/passwords.ts';
import { operation } from '../http/operation.ts';
import { IdParams } from '../schemas/common.ts';
import { NewUserRequest, User, UserChangesRequest, UserList } from '../schemas/users.ts';

/** Returns `me` and the user-management operations; new passwords are hashed at `passwordCost`. */
export function userOperations({ users, clock, passwordCost }: { users: UserRepository; clock: Clock; passwordCost: PasswordCost }) {
  const me = operation({
    operationId: 'users.me',
    summary: 'The signed-in user.',
    tag: 'users',
    response: User,
    handle({ user }) {
      return users.findUser(user.id);
    },
  });

  const list = operation({
    operationId: 'users.list',
    summary: 'Every user, oldest first.',
    tag: 'users',
    response: UserList,
    handle() {
      return users.listUsers();
    },
  });

  const create = operation({
    operationId: 'users.create',
    summary: 'Create an active user.',
    tag: 'users',
    body: NewUserRequest,
    response: User,
    problems: ['conflict'],
    async handle({ body }) {
      const passwordHash = await hashPassword(body.password, passwordCost);
      return users.insertUser({ email: body.email, fullName: body.fullName, role: body.role, passwordHash }, clock());
    },
  });

  const update = operation({
    operationId: 'users.update',
    summary: "Change a user's name, role, password or active flag; deactivation revokes their sessions at once.",
    tag: 'users',
    params: IdParams,
    body: UserChangesRequest,
    response: User,
    problems: ['not_found', 'conflict'],
    async handle({ params, body }) {
      if (!(await users.findUser(params.id))) throw new AppError('not_found', `No user with id ${params.id}.`);
      const passwordHash = body.password === undefined ? undefined : await hashPassword(body.password, passwordCost);
      return users.updateUser(params.id, { fullName: body.fullName, role: body.role, isActive: body.isActive, passwordHash }, clock());
    },
  });

  return { me, list, create, update };
}
