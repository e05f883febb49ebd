// Temporary folders for a test file, removed when the file's tests are done.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

const dirs: string[] = [];
let cleanupRegistered = false;

/** Returns a new empty folder under the system's temporary folder; it is removed after this file's tests. */
export function tempDir(prefix = 'campaigns-test-'): string {
  if (!cleanupRegistered) {
    cleanupRegistered = true;
    after(() => {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
