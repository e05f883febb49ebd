// Temporary folders for a test file, removed when the file's process ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dirs: string[] = [];
let cleanupRegistered = false;

/**
 * Returns a new empty folder under the system's temporary folder; it is removed when this test file's process exits.
 * (Not node:test's `after`: called inside a test, it attaches to that test, and the folders of later tests stayed.)
 */
export function tempDir(prefix = 'campaigns-test-'): string {
  if (!cleanupRegistered) {
    cleanupRegistered = true;
    process.once('exit', () => {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
