/**
 * `npm run config:readme`: rewrites README's configuration tables from the variable definitions
 * (src/config/config.ts), formatted by prettier, after building. src/config/config-readme.spec.ts fails until it is run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createRequire } from 'node:module';
import prettier from 'prettier';

const ROOT = resolve(import.meta.dirname, '..', '..');
const README = resolve(ROOT, 'README.md');
// The built module (npm run build first): plain node cannot load the service's TypeScript sources.
const { writeConfigTables } = createRequire(import.meta.url)(
  resolve(ROOT, 'dist/src/config/config-readme.js'),
) as typeof import('../../src/config/config-readme.js');

const options = (await prettier.resolveConfig(README)) ?? {};
const written = await prettier.format(writeConfigTables(readFileSync(README, 'utf8')), {
  ...options,
  filepath: README,
});
writeFileSync(README, written);
console.log('README.md: configuration tables written from src/config/config.ts');
