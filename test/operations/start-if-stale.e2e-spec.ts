import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const SCRIPT = resolve(__dirname, '..', '..', 'scripts', 'build-if-stale.mts');

/** `npm start`'s first step in a project folder whose `npm run build` only writes the stamp and counts. */
describe('npm start builds only when a source changed since the last build', () => {
  let dir: string;
  const start = () => spawnSync(process.execPath, [SCRIPT], { cwd: dir, encoding: 'utf8' });
  const stamp = () => join(dir, 'dist', 'build-info.json');
  const builds = () => statSync(join(dir, 'builds')).size;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'start-if-stale-'));
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'main.ts'), 'export {};\n');
    writeFileSync(join(dir, 'builds'), '');
    const build =
      "const fs=require('fs');fs.mkdirSync('dist',{recursive:true});fs.writeFileSync('dist/build-info.json','{}');fs.appendFileSync('builds','x')";
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'p', private: true, scripts: { build: `node -e "${build}"` } }),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds the first time, skips the build when nothing changed, and builds again after a change', () => {
    const first = start();
    expect({ status: first.status, out: first.stdout }).toEqual({
      status: 0,
      out: expect.stringContaining('no build yet: building'),
    });
    expect(builds()).toBe(1);

    const built = statSync(stamp()).mtimeMs;
    const again = start();
    expect({ status: again.status, out: again.stdout }).toEqual({
      status: 0,
      out: expect.stringContaining('dist/ is up to date: not rebuilding'),
    });
    expect(builds()).toBe(1);
    expect(statSync(stamp()).mtimeMs).toBe(built);

    // A source newer than the last build.
    const later = new Date(built + 60_000);
    utimesSync(join(dir, 'src', 'main.ts'), later, later);
    const changed = start();
    expect({ status: changed.status, out: changed.stdout }).toEqual({
      status: 0,
      out: expect.stringContaining(`${join('src', 'main.ts')} changed since the last build: building`),
    });
    expect(builds()).toBe(2);
  });
});
