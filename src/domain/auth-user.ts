// Who is making a request, and the roles a user can have.

export const ROLES = ['marketing_lead', 'lifecycle_marketer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The signed-in user as the HTTP layer sees it after authentication. */
export interface AuthUser {
  id: string;
  role: Role;
}
