// SQL for users. Returns users in their public shape; knows no HTTP.
import { randomUUID } from 'node:crypto';
import { AppError } from '../domain/errors.ts';
import type { Role } from '../domain/auth-user.ts';
import { isUniqueViolation } from './database.ts';
import type { SqliteEngine } from './engine.ts';

/** A user as the API shows it: exactly these fields. */
export interface User {
  id: string;
  fullName: string;
  email: string;
  role: Role;
  isActive: boolean;
  createdAt: string;
}

/** What creating a user stores; the password already hashed. */
export interface NewUser {
  email: string;
  fullName: string;
  role: Role;
  passwordHash: string;
}

/** What an update may change; an absent field is kept. */
export interface UserChanges {
  fullName?: string;
  role?: Role;
  isActive?: boolean;
  passwordHash?: string;
}

/** A row of `users` as both engines return it (instants as epoch milliseconds). */
export interface UserRow {
  id: string;
  email: string;
  full_name: string;
  role: Role;
  is_active: number;
  password_hash: string;
  created_at: number;
}

/** Returns the public shape of a stored user. */
export function toUser(row: UserRow): User {
  return {
    id: row.id,
    fullName: row.full_name,
    email: row.email,
    role: row.role,
    isActive: row.is_active === 1,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** Every user, oldest first: the same text on both engines. */
export const LIST_USERS_SQL = 'SELECT * FROM users ORDER BY created_at, id';

/** The users as the service stores them; every function resolves once its statements have run. */
export interface UserRepository {
  /** Resolves to the user with this id, or undefined. */
  findUser(id: string): Promise<User | undefined>;
  /** Resolves to the user with this (normalized) email and their password hash, or undefined. */
  findCredentials(email: string): Promise<{ user: User; passwordHash: string } | undefined>;
  /** Resolves to every user, oldest first. */
  listUsers(): Promise<User[]>;
  /** Resolves to how many users there are, active or not. */
  countUsers(): Promise<number>;
  /** Stores a new active user and resolves to it; rejects with `conflict` when the email is taken. */
  insertUser(user: NewUser, now: Date): Promise<User>;
  /**
   * Stores the user only if there are no users at all, deciding and inserting as one step (instances starting at once
   * on an empty database make one first admin); resolves to it, or undefined when a user existed.
   */
  insertFirstUser(user: NewUser, now: Date): Promise<User | undefined>;
  /**
   * Applies the changes in one transaction and resolves to the user. Deactivation also revokes the user's refresh
   * tokens. Rejects with `not_found` for an unknown id and `conflict` when no active admin would remain.
   */
  updateUser(id: string, changes: UserChanges, now: Date): Promise<User>;
}

/** Returns the user queries on the engine, prepared once so a typo fails at start-up. */
export function createUserRepository(engine: SqliteEngine): UserRepository {
  const { db } = engine;
  const byId = db.prepare<[string], UserRow>('SELECT * FROM users WHERE id = ?');
  const byEmail = db.prepare<[string], UserRow>('SELECT * FROM users WHERE email = ?');
  const all = db.prepare<[], UserRow>(LIST_USERS_SQL);
  const countAll = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM users');
  const insert = db.prepare(
    `INSERT INTO users (id, email, full_name, role, is_active, password_hash, created_at, updated_at)
     VALUES (@id, @email, @fullName, @role, 1, @passwordHash, @now, @now)`,
  );
  const activeAdmins = db.prepare<[], { n: number }>(`SELECT count(*) AS n FROM users WHERE role = 'admin' AND is_active = 1`);
  const revokeTokens = db.prepare(
    `UPDATE refresh_tokens SET revoked_at = ?, revoked_reason = 'deactivated' WHERE user_id = ? AND revoked_at IS NULL`,
  );
  const update = db.prepare(
    `UPDATE users SET full_name = coalesce(@fullName, full_name), role = coalesce(@role, role),
       is_active = coalesce(@isActive, is_active), password_hash = coalesce(@passwordHash, password_hash),
       updated_at = @now
     WHERE id = @id`,
  );

  return {
    async findUser(id) {
      const row = byId.get(id);
      return row && toUser(row);
    },

    async findCredentials(email) {
      const row = byEmail.get(email);
      return row && { user: toUser(row), passwordHash: row.password_hash };
    },

    async listUsers() {
      return all.all().map(toUser);
    },

    async countUsers() {
      return countAll.get()?.n ?? 0;
    },

    insertUser(user, now) {
      return engine.write(() => {
        const id = randomUUID();
        try {
          insert.run({ ...user, id, now: now.getTime() });
        } catch (error) {
          if (isUniqueViolation(error)) throw new AppError('conflict', `A user with the email ${user.email} already exists.`);
          throw error;
        }
        return toUser(byId.get(id)!);
      });
    },

    insertFirstUser(user, now) {
      // The write lock of the transaction orders it after any other insert: the count sees them all.
      return engine.write(() => {
        if ((countAll.get()?.n ?? 0) > 0) return undefined;
        const id = randomUUID();
        insert.run({ ...user, id, now: now.getTime() });
        return toUser(byId.get(id)!);
      });
    },

    updateUser(id, changes, now) {
      // One transaction: the last-admin check sees the update it may undo.
      return engine.write(() => {
        const before = byId.get(id);
        if (!before) throw new AppError('not_found', `No user with id ${id}.`);
        update.run({
          id,
          fullName: changes.fullName ?? null,
          role: changes.role ?? null,
          isActive: changes.isActive === undefined ? null : Number(changes.isActive),
          passwordHash: changes.passwordHash ?? null,
          now: now.getTime(),
        });
        if (before.role === 'admin' && before.is_active === 1 && activeAdmins.get()!.n === 0) {
          throw new AppError('conflict', 'This is the last active admin; make another user admin first.');
        }
        if (changes.isActive === false) revokeTokens.run(now.getTime(), id);
        return toUser(byId.get(id)!);
      });
    },
  };
}
