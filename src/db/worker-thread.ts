// Starting a worker thread on one of these modules: under tsx (TypeScript sources) the thread first registers tsx's
// loader, which the main thread's --import does not give it. That loader costs each thread about 25 MB (its module
// hooks run on a thread of their own), so a thread started with `bundle` runs instead one JavaScript module that
// esbuild (which tsx brings) builds from the entry and everything it imports but packages: about 10 MB a thread.
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { bundleOptions } from '../esbuild-options.js';

export interface ThreadOptions {
  /** Replaces the default limits, a young generation of 4 MB. */
  resourceLimits?: WorkerOptions['resourceLimits'];
  /**
   * Under tsx, run the entry bundled into one JavaScript module (falls back to tsx's loader if it cannot be built).
   * Only for entries whose modules use `import.meta.url` for paths next to the entry, as the bundle sees the entry's.
   */
  bundle?: boolean;
}

/** Returns a started worker thread running `entry`, a module of src/, with `workerData`; unref'd. */
export function startWorkerThread(entry: URL, workerData: unknown, transferList: Transferable[] = [], { resourceLimits, bundle = false }: ThreadOptions = {}): Worker {
  // A small young generation: each thread is a heap of its own, and the default lets each grow by tens of MB of garbage.
  const options: WorkerOptions = { workerData, transferList: transferList as WorkerOptions['transferList'], resourceLimits: resourceLimits ?? { maxYoungGenerationSizeMb: 4 } };
  const typescript = entry.pathname.endsWith('.ts');
  const built = typescript && bundle ? bundled(entry) : undefined;
  const thread = built
    ? // Not the process's own flags either: they load tsx again.
      new Worker(built, { ...options, execArgv: [] })
    : typescript
      ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); })`, {
          eval: true,
          ...options,
        })
      : new Worker(entry, options);
  thread.unref();
  return thread;
}

interface Esbuild {
  buildSync(options: Record<string, unknown>): { outputFiles: { text: string }[] };
  build(options: Record<string, unknown>): Promise<{ outputFiles: { text: string }[] }>;
  /** Ends esbuild's helper process (and its pipes); a later call starts a new one. */
  stop(): void;
}

/** Bundles built by this thread, by entry: the module's URL, or undefined when it could not be built. */
const bundles = new Map<string, URL | undefined>();
/** Entries whose bundle is being built in the background (prepareThreads). */
const building = new Set<string>();

/** esbuild's options for one entry: everything it imports but packages, in one ES module. */
function buildOptions(entry: URL): Record<string, unknown> {
  // Every module of the bundle sees the entry's URL: paths next to the entry resolve as they did.
  return { ...bundleOptions(fileURLToPath(entry)), define: { 'import.meta.url': JSON.stringify(entry.href) } };
}

/**
 * Writes a built entry in node_modules/.cache/campaign-threads/ (inside node_modules, so the packages it imports
 * resolve from the project's), named by its content so processes building at once write the same file.
 */
function writeBundle(entry: URL, text: string, require: NodeJS.Require): URL {
  const folder = join(dirname(require.resolve('esbuild/package.json')), '..', '.cache', 'campaign-threads');
  const name = `${entry.pathname.split('/').pop()!.replace(/\.ts$/, '')}-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`;
  mkdirSync(folder, { recursive: true });
  const file = join(folder, name);
  const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.partial`;
  writeFileSync(partial, text);
  renameSync(partial, file);
  return pathToFileURL(file);
}

function cannotBuild(entry: URL, error: unknown): undefined {
  // Still runs, through tsx's loader: slower to start, and about 25 MB more, which deserves a line in the log.
  process.stderr.write(`Could not build ${entry.pathname} into one module (${error instanceof Error ? error.message.split('\n').slice(0, 2).join(' ') : String(error)}); its thread runs through tsx's loader.\n`);
  return undefined;
}

/**
 * Builds the bundles of these thread entries in the background (esbuild works in a process of its own), so that
 * starting their threads later does not stop the event loop for a build (tens of milliseconds each, more on a busy
 * machine). Under tsx only; a thread started before its build ends builds it at once, as without this.
 */
export function prepareThreads(entries: URL[]): void {
  const wanted = entries.filter((entry) => entry.pathname.endsWith('.ts') && !bundles.has(entry.href) && !building.has(entry.href));
  if (wanted.length === 0) return;
  let esbuild: Esbuild;
  let require: NodeJS.Require;
  try {
    require = createRequire(wanted[0]!);
    esbuild = require('esbuild') as Esbuild;
  } catch {
    return; // startWorkerThread reports it, if a thread is started
  }
  for (const entry of wanted) building.add(entry.href);
  void Promise.allSettled(
    wanted.map(async (entry) => {
      try {
        const { outputFiles } = await esbuild.build(buildOptions(entry));
        if (!bundles.has(entry.href)) bundles.set(entry.href, writeBundle(entry, outputFiles[0]!.text, require));
      } catch {
        // Left to startWorkerThread, which builds it at once (and reports it if it cannot).
      } finally {
        building.delete(entry.href);
      }
    }),
  ).then(() => esbuild.stop());
}

/** Returns the entry built into one ES module; undefined when it cannot be built. */
function bundled(entry: URL): URL | undefined {
  if (bundles.has(entry.href)) return bundles.get(entry.href);
  let url: URL | undefined;
  let esbuild: Esbuild | undefined;
  try {
    const require = createRequire(entry);
    esbuild = require('esbuild') as Esbuild;
    const [output] = esbuild.buildSync(buildOptions(entry)).outputFiles;
    url = writeBundle(entry, output!.text, require);
  } catch (error) {
    url = cannotBuild(entry, error);
  } finally {
    // Its helper process would otherwise live as long as the service, with memory no RSS of ours shows.
    esbuild?.stop();
  }
  bundles.set(entry.href, url);
  return url;
}
