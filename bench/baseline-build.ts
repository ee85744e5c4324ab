/**
 * The pinned baseline build of the baseline guard (bench/README.md, "Baseline guard"): the commit named
 * in bench/baseline.json, unpacked once with `git archive` into `.data/bench-baseline/<sha>/` (under
 * `.data/`, which git ignores) and built there with its own `npm run build`. Later runs reuse it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The repository: above bench/, or above dist-bench/bench/ when the bench's build runs this file. */
const ROOT = ((up) => (basename(up) === 'dist-bench' ? dirname(up) : up))(join(__dirname, '..'));

export type BaselinePin = { commit: string; pinned: string; why: string };
export type BaselineBuild = BaselinePin & { sha: string; short: string; main: string; dir: string };

/** A failure told in one line (the guard prints it as it is, without a stack). */
export class BaselineError extends Error {}

export function readPin(): BaselinePin {
  const file = join(ROOT, 'bench', 'baseline.json');
  try {
    const pin = JSON.parse(readFileSync(file, 'utf8')) as Partial<BaselinePin>;
    if (typeof pin.commit !== 'string' || !pin.commit) throw new Error('no "commit"');
    return { commit: pin.commit, pinned: pin.pinned ?? '?', why: pin.why ?? '' };
  } catch (err) {
    throw new BaselineError(`cannot read the pin ${file}: ${(err as Error).message}`);
  }
}

const git = (...args: string[]) =>
  execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

type Lock = { packages?: Record<string, { link?: boolean; resolved?: string }> };

/**
 * The installed packages a lock file describes: its entries under node_modules/ that are not
 * workspace links. Two locks that differ only in their workspace packages (packages/*, linked into
 * node_modules) install the same node_modules, apart from those links, which the baseline gets
 * pointing at its own packages/ (see `linkNodeModules`).
 */
const installed = (lock: Lock) =>
  JSON.stringify(
    Object.entries(lock.packages ?? {}).filter(
      ([key, entry]) => key.includes('node_modules/') && !entry.link,
    ),
  );

const workspaceLinks = (lock: Lock) =>
  Object.entries(lock.packages ?? {}).flatMap(([key, entry]) =>
    entry.link && entry.resolved && key.startsWith('node_modules/')
      ? [{ name: key.slice('node_modules/'.length), resolved: entry.resolved }]
      : [],
  );

/**
 * node_modules for the baseline from the current one: a link to each of its entries, except the
 * workspace packages, which link to the baseline's own packages/ (its playground bundles its own
 * client package). Nothing is installed or written in the current node_modules.
 */
function linkNodeModules(dir: string, lock: Lock): void {
  const from = realpathSync(join(ROOT, 'node_modules'));
  const to = join(dir, 'node_modules');
  const links = new Map(workspaceLinks(lock).map((l) => [l.name, l.resolved]));
  const scopes = new Set([...links.keys()].filter((n) => n.includes('/')).map((n) => n.split('/')[0]));
  mkdirSync(to);
  for (const entry of readdirSync(from)) {
    if (scopes.has(entry)) {
      mkdirSync(join(to, entry));
      for (const sub of readdirSync(join(from, entry)))
        if (!links.has(`${entry}/${sub}`)) symlinkSync(join(from, entry, sub), join(to, entry, sub));
    } else if (!links.has(entry)) symlinkSync(join(from, entry), join(to, entry));
  }
  for (const [name, resolved] of links) symlinkSync(join(dir, resolved), join(to, name));
}

/** Runs `cmd` in `dir` with its output appended to `log`; a failure is one line naming the log. */
function step(what: string, cmd: string, args: string[], dir: string, log: string, env: NodeJS.ProcessEnv) {
  const fd = openSync(log, 'a');
  try {
    const r = spawnSync(cmd, args, { cwd: dir, env, stdio: ['ignore', fd, fd] });
    if (r.error) throw new BaselineError(`${what} could not start: ${r.error.message}`);
    if (r.status !== 0)
      throw new BaselineError(`${what} exited with ${r.status ?? r.signal} (its output: ${log})`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The baseline's `dist/src/main.js`, built if it is not yet. The first time: `git archive` of the
 * commit, node_modules linked from the current one when the two lock files install the same packages
 * (else `npm ci` there), then `npm run build` there; a file `.built` marks a finished build, so a build
 * cut short is started again from scratch. Every failure is a BaselineError of one line.
 */
export function baselineBuild(progress: (what: string) => void): BaselineBuild {
  const pin = readPin();
  let sha: string;
  try {
    sha = git('rev-parse', '--verify', '--quiet', `${pin.commit}^{commit}`).trim();
  } catch {
    throw new BaselineError(
      `the pinned commit ${pin.commit} (bench/baseline.json) is not in this repository: fetch it, or pin another`,
    );
  }
  const short = sha.slice(0, 7);
  const cache = join(ROOT, '.data', 'bench-baseline');
  const dir = join(cache, sha);
  const main = join(dir, 'dist', 'src', 'main.js');
  const done = join(dir, '.built');
  const build = { ...pin, sha, short, main, dir };
  if (existsSync(done) && existsSync(main)) return build;

  progress(`baseline: building ${short} once in ${dir} (reused by later runs)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const log = join(cache, `${sha}.log`);
  writeFileSync(log, '');
  // The build's own tools first on the PATH (node 24 among them), as `npm run` would have them.
  const env = {
    ...process.env,
    PATH: [join(dir, 'node_modules', '.bin'), dirname(process.execPath), process.env.PATH].join(':'),
    // scripts/build-info.mts records the commit built; inside this checkout `git rev-parse` would name HEAD.
    IO_BRIDGE_COMMIT: sha,
  };
  step(
    `git archive ${short}`,
    'sh',
    ['-c', `git -C '${ROOT}' archive '${sha}' | tar -x -C '${dir}'`],
    dir,
    log,
    env,
  );
  const current = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as Lock;
  const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as Lock;
  if (installed(lock) === installed(current) && existsSync(join(ROOT, 'node_modules'))) {
    linkNodeModules(dir, lock);
  } else {
    progress(`baseline: ${short} installs other packages than this checkout: npm ci there`);
    step(`npm ci in ${dir}`, 'npm', ['ci', '--no-audit', '--no-fund'], dir, log, env);
  }
  step(`npm run build of ${short}`, 'npm', ['run', 'build'], dir, log, env);
  if (!existsSync(main))
    throw new BaselineError(`the build of ${short} wrote no ${main} (its output: ${log})`);
  writeFileSync(done, `${new Date().toISOString()}\n`);
  return build;
}
