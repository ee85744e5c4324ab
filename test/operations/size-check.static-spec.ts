/**
 * The size check of `npm run check` (scripts/check-sizes.mts), run as `npm run check` runs it, on
 * small trees made for each rule: what it flags and what it lets through.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const SCRIPT = resolve(__dirname, '..', '..', 'scripts', 'check-sizes.mts');

/** `node scripts/check-sizes.mts <root>` on a tree of the given files. */
function checkSizes(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), 'size-check-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    const { status, stderr } = spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });
    return { status, problems: stderr.trim() ? stderr.trim().split('\n') : [] };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const lines = (n: number) => Array.from({ length: n }, (_, i) => `// line ${i + 1}`).join('\n') + '\n';
const params = (n: number) => Array.from({ length: n }, (_, i) => `p${i}: string`).join(', ');
const nestClass = (decorator: string, name: string, n: number) =>
  `import { Controller, Injectable } from '@nestjs/common';\n${decorator}\nexport class ${name} {\n  constructor(${params(n)}) {}\n}\n`;

describe('the size check (npm run check)', () => {
  it('fails on a source file over 350 lines, one line naming it', () => {
    expect(checkSizes({ 'src/a/long.ts': lines(351), 'src/a/fine.ts': lines(350) })).toEqual({
      status: 1,
      problems: [
        'src/a/long.ts: 351 lines, more than 350: split it by job, each part named for what it holds',
      ],
    });
  });

  it('leaves specs and files outside src/ alone', () => {
    expect(checkSizes({ 'src/a/long.spec.ts': lines(900), 'test/long.ts': lines(900) })).toEqual({
      status: 0,
      problems: [],
    });
  });

  it('fails on a provider or a controller whose constructor takes more than 10 parameters', () => {
    const { status, problems } = checkSizes({
      'src/a/many.service.ts': nestClass('@Injectable()', 'ManyService', 11),
      'src/a/many.controller.ts': nestClass("@Controller('many')", 'ManyController', 12),
      'src/a/ten.service.ts': nestClass('@Injectable()', 'TenService', 10),
      'src/a/plain.ts': `export class Plain {\n  constructor(${params(15)}) {}\n}\n`,
    });
    expect(status).toBe(1);
    expect(problems.sort()).toEqual(
      [
        "src/a/many.controller.ts:4: ManyController's constructor takes 12 parameters, more than 10: group the collaborators that serve one job behind one provider",
        "src/a/many.service.ts:4: ManyService's constructor takes 11 parameters, more than 10: group the collaborators that serve one job behind one provider",
      ].sort(),
    );
  });

  it('reads the constructor as TypeScript does, not line by line', () => {
    // Parameters over several lines, with decorators and defaults holding commas and parentheses.
    const text = [
      "import { Inject, Injectable } from '@nestjs/common';",
      '@Injectable()',
      'export class Spread {',
      '  constructor(',
      ...Array.from(
        { length: 11 },
        (_, i) =>
          `    @Inject('T${i}') private readonly p${i}: Map<string, [number, number]> = new Map([['a,b', [1, 2]]]),`,
      ),
      '  ) {}',
      '}',
      '',
    ].join('\n');
    const { status, problems } = checkSizes({ 'src/spread.ts': text });
    expect(status).toBe(1);
    expect(problems).toEqual([
      "src/spread.ts:4: Spread's constructor takes 11 parameters, more than 10: group the collaborators that serve one job behind one provider",
    ]);
  });
});
