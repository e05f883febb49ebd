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
  /** Ends esbuild's helper process (and its pipes); a later call starts a new one. */
  stop(): void;
}

/** Bundles built by this thread, by entry. */
const bundles = new Map<string, URL | undefined>();

/**
 * Returns the entry built into one ES module (packages left as imports) in node_modules/.cache/campaign-threads/,
 * named by its content so processes building at once write the same file; undefined when esbuild is not there.
 */
function bundled(entry: URL): URL | undefined {
  if (bundles.has(entry.href)) return bundles.get(entry.href);
  let url: URL | undefined;
  let esbuild: Esbuild | undefined;
  try {
    const require = createRequire(entry);
    esbuild = require('esbuild') as Esbuild;
    const [output] = esbuild.buildSync({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      write: false,
      logLevel: 'silent',
      // Every module of the bundle sees the entry's URL: paths next to the entry resolve as they did.
      define: { 'import.meta.url': JSON.stringify(entry.href) },
    }).outputFiles;
    const text = output!.text;
    // Inside node_modules, so the packages the bundle imports resolve from the project's node_modules.
    const folder = join(dirname(require.resolve('esbuild/package.json')), '..', '.cache', 'campaign-threads');
    const name = `${entry.pathname.split('/').pop()!.replace(/\.ts$/, '')}-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`;
    mkdirSync(folder, { recursive: true });
    const file = join(folder, name);
    const partial = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.partial`;
    writeFileSync(partial, text);
    renameSync(partial, file);
    url = pathToFileURL(file);
  } catch (error) {
    // Still runs, through tsx's loader: slower to start, and about 25 MB more, which deserves a line in the log.
    process.stderr.write(`Could not build ${entry.pathname} into one module (${error instanceof Error ? error.message.split('\n').slice(0, 2).join(' ') : String(error)}); its thread runs through tsx's loader.\n`);
    url = undefined;
  } finally {
    // Its helper process would otherwise live as long as the service, with memory no RSS of ours shows.
    esbuild?.stop();
  }
  bundles.set(entry.href, url);
  return url;
}
