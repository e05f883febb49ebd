// What `npm start` (scripts/start.js) and the worker threads (src/db/worker-thread.ts) ask esbuild for: the entry and
// everything it imports but packages, as one ES module for Node 20, kept in memory for the caller to write. Plain
// JavaScript, so that scripts/start.js can import it before anything can load TypeScript.

/**
 * Returns esbuild's build options for the module at `entryPath` (a file path).
 * @param {string} entryPath
 * @returns {{ entryPoints: string[], bundle: true, platform: 'node', format: 'esm', target: string, packages: 'external', write: false, logLevel: 'silent' }}
 */
export function bundleOptions(entryPath) {
  return { entryPoints: [entryPath], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', write: false, logLevel: 'silent' };
}
