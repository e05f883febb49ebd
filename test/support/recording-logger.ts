// A logger for tests that keeps its lines as objects and resolves a wait once a line matches: what a test of a
// background loop (the webhook dispatcher, the backup schedule) waits on instead of sleeping.
import { createLogger, type Logger } from '../../src/http/logger.ts';

/** Returns a logger keeping its lines, with a wait for the first line (written or to come) that matches. */
export function recordingLogger() {
  const lines: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  const logger: Logger = createLogger('info', (text) => {
    lines.push(JSON.parse(text) as Record<string, unknown>);
    for (const wake of waiters) wake();
  });
  const waitFor = (matches: (line: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const check = () => {
        const found = lines.find(matches);
        if (!found) return;
        waiters.delete(check);
        resolve(found);
      };
      waiters.add(check);
      check();
    });
  return { logger, lines, waitFor };
}
