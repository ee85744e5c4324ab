// `npm run check` (and `node scripts/check-docs.mts [root]`): the README stays short, every page's
// links work inside the repository, the code's comments cite the repository's docs, and the files
// the architecture's table from behaviour to file names exist. Prints each problem and exits 1 when
// there is one.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** A newcomer reads the README in five minutes; the detail lives in docs/. */
export const README_MAX_LINES = 200;

/** The files under `dir` (relative to `root`) whose names end with `suffix`, as paths relative to `root`. */
function filesUnder(root: string, dir: string, suffix: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(join(root, at))) {
      const path = join(at, entry);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (entry.endsWith(suffix)) found.push(path);
    }
  };
  if (existsSync(join(root, dir))) walk(dir);
  return found;
}

/** The pages checked: the README, everything under docs/ and bench/, and each package's README. */
function pages(root: string): string[] {
  const found = ['README.md', ...filesUnder(root, 'docs', '.md'), ...filesUnder(root, 'bench', '.md')];
  if (existsSync(join(root, 'packages')))
    for (const pkg of readdirSync(join(root, 'packages')))
      if (existsSync(join(root, 'packages', pkg, 'README.md')))
        found.push(join('packages', pkg, 'README.md'));
  return found.filter((page) => existsSync(join(root, page)));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a markdown page's headings (a repeated heading gets -1, -2…), outside code blocks. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n ? `${base}-${n}` : base);
  }
  return result;
}

/** The link targets of a page (`[text](target)`, images too), outside code blocks and code spans. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}

/** Every problem of the pages under `root`, one sentence each. */
export function docProblems(root: string): string[] {
  const problems: string[] = [];
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const lines = readme.replace(/\n$/, '').split('\n').length;
  if (lines > README_MAX_LINES)
    problems.push(`README.md has ${lines} lines, more than ${README_MAX_LINES}: move detail into docs/`);
  for (const page of pages(root)) {
    const text = readFileSync(join(root, page), 'utf8');
    if (/\.\.\/shared\/|\/work\//.test(text))
      problems.push(`${page} names a path outside the repository (../shared/ or /work/)`);
    for (const target of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path ? resolve(root, dirname(page), decodeURI(path)) : join(root, page);
      const inside = relative(root, file);
      if (inside.startsWith('..') || inside.startsWith(sep)) {
        problems.push(`${page} links outside the repository: ${target}`);
        continue;
      }
      if (!existsSync(file)) {
        problems.push(`${page} links to a missing file: ${target}`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
        problems.push(`${page} links to a missing heading: ${target}`);
    }
  }
  return problems;
}

/**
 * What the product code cites: the repository's own docs, which a clone has. A citation of working
 * notes or an issue tracker outside it (`CONTRACT section 3`, `issue 25`) is a problem, and so is a
 * `docs/<page>.md#<anchor>` that does not resolve.
 */
export function citationProblems(root: string): string[] {
  const problems: string[] = [];
  for (const file of filesUnder(root, 'src', '.ts')) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/CONTRACT section|\bissues? \d+\b|\.\.\/shared\//gi))
      problems.push(`${file} cites what the repository does not hold: '${m[0]}' (cite docs/ instead)`);
    for (const m of text.matchAll(/\bdocs\/([\w-]+\.md)(?:#([\w-]+))?/g)) {
      const page = join(root, 'docs', m[1]);
      if (!existsSync(page)) problems.push(`${file} cites a missing page: docs/${m[1]}`);
      else if (m[2] && !anchors(readFileSync(page, 'utf8')).has(m[2]))
        problems.push(`${file} cites a missing heading: docs/${m[1]}#${m[2]}`);
    }
  }
  return problems;
}

/** The page and heading of the table from behaviour to file (docs/architecture.md#where-each-job-lives). */
export const JOB_TABLE = { page: 'docs/architecture.md', heading: 'Where each job lives' } as const;

/** The lines of the markdown table that follows `heading` (its first table after the heading). */
function tableAfter(markdown: string, heading: string): string[] | undefined {
  const lines = markdown.split('\n');
  const at = lines.findIndex(
    (line) => /^#{1,6}\s/.test(line) && line.replace(/^#+\s+/, '').trim() === heading,
  );
  if (at < 0) return undefined;
  let start = at + 1;
  while (start < lines.length && !lines[start].startsWith('|') && !/^#{1,6}\s/.test(lines[start])) start++;
  let end = start;
  while (end < lines.length && lines[end].startsWith('|')) end++;
  return end > start ? lines.slice(start, end) : undefined;
}

/** Whether `name` (the last part of a path, `*` standing for any characters) names a file in `dir`. */
function present(root: string, dir: string, name: string): boolean {
  if (!name.includes('*')) return existsSync(join(root, dir, name));
  const pattern = new RegExp(`^${name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
  return existsSync(join(root, dir)) && readdirSync(join(root, dir)).some((entry) => pattern.test(entry));
}

/**
 * Every file or folder the "Where each job lives" table names exists, so a file moved or split
 * without the table fails `npm run check`. A cell's code spans with a `/` are paths from the
 * repository's root (`src/ops/` a folder); a bare name (`sse-writer.ts`) is beside the path before it
 * in the same cell, and `*` in a name stands for any characters.
 */
export function jobTableProblems(root: string): string[] {
  const { page, heading } = JOB_TABLE;
  const where = `${page} ("${heading}")`;
  if (!existsSync(join(root, page))) return [];
  const table = tableAfter(readFileSync(join(root, page), 'utf8'), heading);
  if (!table) return [`${page} has no table under "${heading}"`];
  const problems: string[] = [];
  // The header and the separator line name no file.
  for (const row of table.slice(2)) {
    const cells = row.split('|').slice(1, -1);
    let dir: string | undefined;
    for (const [, span] of (cells[1] ?? '').matchAll(/`([^`]+)`/g)) {
      const path = span.trim();
      if (path.includes('/')) {
        dir = path.endsWith('/') ? path.replace(/\/+$/, '') : dirname(path);
        const name = path.endsWith('/') ? '' : path.slice(path.lastIndexOf('/') + 1);
        if (!present(root, dir, name)) problems.push(`${where} names a missing file: ${path}`);
      } else if (/\.[a-z]+$/i.test(path)) {
        if (!dir) problems.push(`${where} names ${path} with no path before it to say where`);
        else if (!present(root, dir, path)) problems.push(`${where} names a missing file: ${dir}/${path}`);
      }
    }
  }
  return problems;
}

if (import.meta.main) {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  const problems = [...docProblems(root), ...citationProblems(root), ...jobTableProblems(root)];
  for (const problem of problems) console.error(problem);
  if (problems.length) process.exit(1);
  console.log(
    `docs: README.md within ${README_MAX_LINES} lines, every link resolves, src/ cites only docs/ that exist, every file of ${JOB_TABLE.page}'s "${JOB_TABLE.heading}" exists`,
  );
}
