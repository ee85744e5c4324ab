// `npm start`: runs `npm run build` only when a file the build reads is newer than the last build's
// final output (dist/build-info.json), so a start with nothing changed skips the compiler.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const INPUTS = [
  'src',
  'migrations',
  'packages',
  'playground',
  'tsconfig.json',
  'tsconfig.build.json',
  'nest-cli.json',
  'package.json',
  'package-lock.json',
];
const STAMP = join('dist', 'build-info.json');
const SKIPPED = new Set(['node_modules', 'dist', '.git']);

/** The newest modification time under `path` (a file or a folder), and the file that has it. */
function newest(path: string): { mtime: number; file: string | undefined } {
  if (!existsSync(path)) return { mtime: 0, file: undefined };
  const stat = statSync(path);
  if (!stat.isDirectory()) return { mtime: stat.mtimeMs, file: path };
  let best: { mtime: number; file: string | undefined } = { mtime: stat.mtimeMs, file: path };
  for (const entry of readdirSync(path)) {
    if (SKIPPED.has(entry)) continue;
    const found = newest(join(path, entry));
    if (found.mtime > best.mtime) best = found;
  }
  return best;
}

const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
const changed = INPUTS.map(newest).reduce((a, b) => (b.mtime > a.mtime ? b : a));
if (built && changed.mtime <= built) {
  console.log('dist/ is up to date: not rebuilding (npm run build forces a build)');
} else {
  console.log(built ? `${changed.file} changed since the last build: building` : 'no build yet: building');
  const npm = process.env.npm_execpath;
  const result = npm
    ? spawnSync(process.execPath, [npm, 'run', 'build'], { stdio: 'inherit' })
    : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(result.status ?? 1);
}
