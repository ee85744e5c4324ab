import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What this program is: its package version, the commit it was built from, the Node running it. */
export type BuildInfo = { version: string; commit: string; node: string };

/** From the project root: `src/common` (tests) or `dist/src/common` (the built program). */
const candidates = (file: string) => [
  join(__dirname, '..', '..', file),
  join(__dirname, '..', '..', '..', file),
];

function readJson(file: string): Record<string, unknown> | undefined {
  const path = candidates(file).find((p) => existsSync(p));
  return path ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : undefined;
}

let cached: BuildInfo | undefined;

/**
 * `dist/build-info.json`, written by `npm run build` (scripts/build-info.mts); run from sources,
 * package.json's version and an unknown commit.
 */
export function buildInfo(): BuildInfo {
  if (cached) return cached;
  const built = readJson('build-info.json');
  const version =
    [built?.version, readJson('package.json')?.version].find((v) => typeof v === 'string') ?? '0.0.0';
  const commit = typeof built?.commit === 'string' && built.commit ? built.commit : 'unknown';
  cached = { version, commit, node: process.version };
  return cached;
}
