// `npm start`: runs the service (src/main.ts) as one JavaScript module that esbuild (which tsx brings) builds from
// src/ at each start, in under a second. Running the TypeScript sources through tsx's loader instead
// costs about 35 MB of memory for as long as the service runs (Node 20 runs module hooks on a thread of their own,
// with a heap of its own); on a 1 GB machine that is worth the build. When esbuild cannot be loaded or the build
// fails, the service starts through tsx's loader as before, with a warning.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleOptions } from '../src/esbuild-options.js';

const entry = new URL('../src/main.ts', import.meta.url);
/** The expression `import.meta.url`, not the same words in a string (as in the threads' own build options). */
const META_URL = /(?<![\w'"`.])import\.meta\.url(?![\w'"`])/g;

/**
 * Builds src/main.ts and everything it imports but packages into one ES module (and its source map) in
 * node_modules/.cache/campaign-service/; returns the module's URL.
 */
async function build() {
  const require = createRequire(import.meta.url);
  /** @type {typeof import('esbuild')} */
  const esbuild = require('esbuild');
  const folder = join(dirname(require.resolve('esbuild/package.json')), '..', '.cache', 'campaign-service');
  try {
    const { outputFiles } = await esbuild.build({
      ...bundleOptions(fileURLToPath(entry)),
      // A map beside the module, read only with NODE_OPTIONS=--enable-source-maps (stack traces then name the lines of
      // the TypeScript sources): Node holds every map it reads, about 15 MB for this one.
      sourcemap: 'linked',
      outfile: join(folder, 'main.mjs'),
      plugins: [
        {
          // Each module keeps its own `import.meta.url`, so paths beside it (schema.sql, the console's files, the
          // worker threads' entries) resolve as they do from the sources.
          name: 'own-module-url',
          setup(builder) {
            builder.onLoad({ filter: /\.ts$/ }, async ({ path }) => ({
              contents: (await readFile(path, 'utf8')).replace(META_URL, JSON.stringify(pathToFileURL(path).href)),
              loader: 'ts',
            }));
          },
        },
      ],
    });
    await mkdir(folder, { recursive: true });
    // Each file under a name of its own first: services started at once never read half of one.
    for (const { path, contents } of outputFiles) {
      const partial = `${path}.${process.pid}.partial`;
      await writeFile(partial, contents);
      await rename(partial, path);
    }
    return pathToFileURL(join(folder, 'main.mjs'));
  } finally {
    // Its helper process would otherwise live as long as the service.
    await esbuild.stop();
  }
}

let url;
try {
  url = await build();
} catch (error) {
  process.stderr.write(`Could not build the service (${error instanceof Error ? error.message : String(error)}); starting it through tsx's loader.\n`);
  const { register } = await import('tsx/esm/api');
  register();
  url = entry;
}
await import(url.href);
