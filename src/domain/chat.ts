// Assistant chat threads: their default title and the title a first message gives them.

export const DEFAULT_THREAD_TITLE = 'New conversation';

/** Longest title taken from a first message, the ellipsis included. */
export const AUTO_TITLE_LENGTH = 60;

export const MESSAGE_ROLES = ['user', 'assistant'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/**
 * Returns the title a default-titled thread takes from its first message: the message's first non-blank line with its white space runs as single spaces, cut
 * to 60 characters (counted as code points, so no emoji is split) ending in an ellipsis when it was longer.
 */
export function titleFromMessage(content: string): string {
  const line = content.split(/\r\n|\r|\n/).map((l) => l.replace(/\s+/g, ' ').trim()).find(Boolean) ?? DEFAULT_THREAD_TITLE;
  const characters = Array.from(line);
  if (characters.length <= AUTO_TITLE_LENGTH) return line;
  return `${characters.slice(0, AUTO_TITLE_LENGTH - 1).join('').trimEnd()}…`;
}

/**
 * What the assistant may propose: the names of its write tools. chat/tools.ts checks at compile time that its write
 * tools are exactly these, so a tool and its kind of proposal cannot fall out of step.
 */
export const ACTION_KINDS = ['save_segment', 'draft_campaign'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

/** A proposal waits for its user, who confirms (it then runs once) or rejects it. */
export const ACTION_STATUSES = ['proposed', 'confirmed', 'rejected'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];
