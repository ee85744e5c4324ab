import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { startApp, TestApp } from '../support/app';

const ROOT = resolve(__dirname, '..', '..');
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

  it('fails on product code that cites working notes or issues, or a page or heading of docs/ that does not exist', () => {
    const root = mkdtempSync(join(tmpdir(), 'docs-check-'));
    try {
      mkdirSync(join(root, 'docs'));
      mkdirSync(join(root, 'src', 'runs'), { recursive: true });
      writeFileSync(join(root, 'README.md'), '# Title\n');
      writeFileSync(join(root, 'docs', 'protocol.md'), '# Protocol\n\n## The stream\n');
      writeFileSync(
        join(root, 'src', 'runs', 'a.ts'),
        [
          '/** Framed as docs/protocol.md#the-stream says (fine). */',
          '/** As CONTRACT section 3 says; see issue 25. */',
          '/** See docs/protocol.md#routes and docs/gone.md. */',
        ].join('\n'),
      );
      const { status, stderr } = checkDocs(root);
      expect(status).toBe(1);
      expect(stderr.trim().split('\n').sort()).toEqual(
        [
          `${join('src', 'runs', 'a.ts')} cites what the repository does not hold: 'CONTRACT section' (cite docs/ instead)`,
          `${join('src', 'runs', 'a.ts')} cites what the repository does not hold: 'issue 25' (cite docs/ instead)`,
          `${join('src', 'runs', 'a.ts')} cites a missing heading: docs/protocol.md#routes`,
          `${join('src', 'runs', 'a.ts')} cites a missing page: docs/gone.md`,
        ].sort(),
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('docs/protocol.md, the contract as built', () => {
  let t: TestApp;
  let doc: Record<string, any>;
  const page = readFileSync(join(ROOT, 'docs', 'protocol.md'), 'utf8');
  const rows = page.split('\n').filter((line) => line.startsWith('|'));

  beforeAll(async () => {
    t = await startApp();
    doc = (await (await fetch(`${t.baseUrl}/docs-json`)).json()) as Record<string, any>;
  });
  afterAll(() => t.close());

  it('lists every route the service serves under its prefix, with its method', () => {
    const routes = Object.entries(doc.paths as Record<string, object>)
      .filter(([path]) => path.startsWith('/io-bridge/'))
      .flatMap(([path, operations]) =>
        Object.keys(operations).map(
          (method) =>
            `| ${method.toUpperCase().padEnd(6)} | \`${path.slice('/io-bridge'.length).replace(/\{(\w+)\}/g, ':$1')}\``,
        ),
      );
    expect(routes.length).toBeGreaterThanOrEqual(13);
    for (const route of routes)
      expect({ route, listed: rows.some((row) => row.startsWith(route)) }).toEqual({ route, listed: true });
  });

  it('explains every error code of the envelope and every RUN_ERROR code, each in its table', () => {
    const schemas = doc.components.schemas;
    const envelopeCodes: string[] = schemas.ErrorCode.enum;
    const runCode = schemas.RunErrorEvent.properties.code;
    const runCodes: string[] = runCode.enum ?? schemas[runCode.allOf[0].$ref.split('/').pop()].enum;
    const [httpTable, runTable] = page.split('### Run error codes');
    for (const code of envelopeCodes)
      expect({ code, explained: new RegExp(`^\\| \`${code}\`\\s+\\| \\d{3}`, 'm').test(httpTable) }).toEqual({
        code,
        explained: true,
      });
    for (const code of runCodes)
      expect({ code, explained: new RegExp(`^\\| \`${code}\`\\s+\\|`, 'm').test(runTable) }).toEqual({
        code,
        explained: true,
      });
  });

  it('stands alone: it names no contract or file outside the repository', () => {
    expect(page).not.toMatch(/CONTRACT|agent-protocol-seed|\.\.\/shared|\/work\//);
  });
});
