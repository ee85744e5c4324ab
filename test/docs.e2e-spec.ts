import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const SCRIPT = join(ROOT, 'scripts', 'check-docs.mts');

/** `node scripts/check-docs.mts <root>`, as `npm run check` runs it on the repository. */
const checkDocs = (root: string) => spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });

describe('the docs check (npm run check)', () => {
  it('passes on this repository: README.md at most 200 lines, every link and anchor resolving', () => {
    const { status, stderr } = checkDocs(ROOT);
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('fails on a long README, a link outside the repository, a missing file or heading, a ../shared/ path', () => {
    const root = mkdtempSync(join(tmpdir(), 'docs-check-'));
    try {
      mkdirSync(join(root, 'docs'));
      const lines = Array.from({ length: 201 }, (_, i) => `line ${i}`);
      lines[0] = '# Title [ops](docs/ops.md#logs) [gone](docs/gone.md) [fine](docs/ops.md#the-env-file)';
      writeFileSync(join(root, 'README.md'), `${lines.join('\n')}\n`);
      writeFileSync(
        join(root, 'docs', 'ops.md'),
        '# Ops\n\n## The `.env` file\n\nSee [the spec](../../shared/spec/x.md) and ../shared/spec/y.\n',
      );

      const { status, stderr } = checkDocs(root);
      expect(status).toBe(1);
      expect(stderr.trim().split('\n').sort()).toEqual(
        [
          'README.md has 201 lines, more than 200: move detail into docs/',
          'README.md links to a missing heading: docs/ops.md#logs',
          'README.md links to a missing file: docs/gone.md',
          'docs/ops.md names a path outside the repository (../shared/ or /work/)',
          'docs/ops.md links outside the repository: ../../shared/spec/x.md',
        ].sort(),
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
