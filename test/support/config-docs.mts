/**
 * `npm run config:docs`: rewrites the configuration tables of docs/configuration.md from the variable
 * definitions (src/config/*-variables.ts, assembled in src/config/config.ts), formatted by prettier,
 * after building.
 * src/config/config-docs.spec.ts fails until it is run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createRequire } from 'node:module';
import prettier from 'prettier';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAGE = resolve(ROOT, 'docs', 'configuration.md');
// The built module (npm run build first): plain node cannot load the service's TypeScript sources.
const { writeConfigTables } = createRequire(import.meta.url)(
  resolve(ROOT, 'dist/src/config/config-docs.js'),
) as typeof import('../../src/config/config-docs.js');

const options = (await prettier.resolveConfig(PAGE)) ?? {};
const written = await prettier.format(writeConfigTables(readFileSync(PAGE, 'utf8')), {
  ...options,
  filepath: PAGE,
});
writeFileSync(PAGE, written);
console.log('docs/configuration.md: configuration tables written from src/config/config.ts');
