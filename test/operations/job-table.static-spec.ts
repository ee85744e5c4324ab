/**
 * The table from behaviour to file of docs/architecture.md ("Where each job lives"), checked by the
 * docs check of `npm run check` (scripts/check-docs.mts): on this repository, and on a copy with a
 * file that is not there.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'check-docs.mts');

/** `node scripts/check-docs.mts <root>`, as `npm run check` runs it. */
function checkDocs(root: string) {
  const { status, stderr } = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
  return { status, problems: stderr.trim() ? stderr.trim().split('\n') : [] };
}

/** A repository of the given files, checked, then removed. */
function checkTree(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'job-table-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    return checkDocs(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const architecture = (rows: string[]) =>
  [
    '# Architecture',
    '',
    '## Where each job lives',
    '',
    '| Behaviour | File |',
    '| --------- | ---- |',
    ...rows,
    '',
    '## Next',
    '',
    '| Not | Checked |',
    '| --- | ------- |',
    '| a | `src/not/checked.ts` |',
    '',
  ].join('\n');

const where = 'docs/architecture.md ("Where each job lives")';

describe("the architecture's table from behaviour to file (npm run check)", () => {
  it('passes on this repository: every file and folder the table names exists', () => {
    expect(checkDocs(ROOT)).toEqual({ status: 0, problems: [] });
  });

  it('passes when every path, bare name beside it, folder and pattern exists', () => {
    const result = checkTree({
      'README.md': '# Title\n',
      'docs/architecture.md': architecture([
        '| runs | `src/runs/a.ts`, `b.ts` |',
        '| ops | `src/ops/` |',
        '| settings | `src/config/config.ts`, the `*-variables.ts` beside it |',
      ]),
      'src/runs/a.ts': '',
      'src/runs/b.ts': '',
      'src/ops/x.ts': '',
      'src/config/config.ts': '',
      'src/config/run-variables.ts': '',
    });
    expect(result).toEqual({ status: 0, problems: [] });
  });

  it('fails on each path, bare name, folder or pattern that names nothing, and on a missing table', () => {
    const result = checkTree({
      'README.md': '# Title\n',
      'docs/architecture.md': architecture([
        '| runs | `src/runs/a.ts`, `gone.ts`, `src/runs/moved.ts` |',
        '| ops | `src/ops/` |',
        '| settings | `src/config/config.ts`, the `*-variables.ts` beside it |',
        '| loose | `orphan.ts` |',
      ]),
      'src/runs/a.ts': '',
      'src/config/config.ts': '',
    });
    expect(result.status).toBe(1);
    expect(result.problems.sort()).toEqual(
      [
        `${where} names a missing file: src/runs/gone.ts`,
        `${where} names a missing file: src/runs/moved.ts`,
        `${where} names a missing file: src/ops/`,
        `${where} names a missing file: src/config/*-variables.ts`,
        `${where} names orphan.ts with no path before it to say where`,
      ].sort(),
    );
    expect(checkTree({ 'README.md': '# Title\n', 'docs/architecture.md': '# Architecture\n' })).toEqual({
      status: 1,
      problems: ['docs/architecture.md has no table under "Where each job lives"'],
    });
  });
});
