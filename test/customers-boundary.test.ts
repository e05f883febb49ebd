// The customer subsystem has one door: nothing outside src/customers/ imports a file inside it but its index.ts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SUBSYSTEM = join(ROOT, 'src', 'customers');
const DOOR = join(SUBSYSTEM, 'index.ts');

/** Every .ts and .js file under `dir`, skipping node_modules. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sources(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

/** The relative module specifiers a file imports, re-exports or loads with import(). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return found;
}

test('outside src/customers/, only src/customers/index.ts is imported', () => {
  const outside = ['src', 'scripts', 'test'].flatMap((dir) => sources(join(ROOT, dir))).filter((file) => !file.startsWith(`${SUBSYSTEM}/`));
  assert.ok(outside.length > 50, `found only ${outside.length} files to check`);
  const leaks = outside.flatMap((file) =>
    specifiers(file)
      .map((specifier) => resolve(file, '..', specifier))
      .filter((target) => target.startsWith(`${SUBSYSTEM}/`) && target !== DOOR)
      .map((target) => `${relative(ROOT, file)} imports ${relative(ROOT, target)}`),
  );
  assert.deepEqual(leaks, []);
});

test('the check sees a leak when there is one', () => {
  const file = join(ROOT, 'src', 'storage.ts');
  const target = resolve(file, '..', './customers/store/repository.ts');
  assert.ok(target.startsWith(`${SUBSYSTEM}/`) && target !== DOOR);
  assert.ok(specifiers(file).includes('./customers/index.ts'), 'src/storage.ts goes through the door');
});

test('files that start a thread of their own say so in their names', () => {
  const threads = sources(SUBSYSTEM).filter((file) => /\bparentPort\b/.test(readFileSync(file, 'utf8')));
  assert.ok(threads.length >= 3);
  assert.deepEqual(threads.filter((file) => !file.endsWith('.thread.ts')).map((file) => relative(ROOT, file)), []);
});
