// JSON-lines logging with levels.

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Returns a logger writing one JSON object per line to `write`, dropping lines below `level`. */
export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line), now: () => Date = () => new Date()): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const emit = (lineLevel: LogLevel) => (message: string, fields: Record<string, unknown> = {}) => {
    if (LOG_LEVELS.indexOf(lineLevel) < threshold) return;
    write(`${JSON.stringify({ time: now().toISOString(), level: lineLevel, msg: message, ...fields })}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
