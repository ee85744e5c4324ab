/**
 * Issue 25: "on a normal run, continuation costs at most one statement per step and at most 5 % of
 * throughput". This build against a build of the commit before the continuation work (a checkout
 * named by BENCH_DURABLE_BASELINE, built): one replica of each, each on a database of its own in the
 * same Postgres, take turns in the realistic closed loop (bench/realistic-bench.ts). Figures: their
 * runs/s and CPU ms per run (the replica's own, from /proc), and the statements per run each
 * database saw over the whole loop (pg_stat_statements, background statements included).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startBuiltService, type BuiltService } from '../test/support/built-service';
import { withClient } from './db-cost';
import type { RatioRow } from './ratios';
import { benchRealistic, formatRealistic, type RealisticFigures } from './realistic-bench';

/** Issue 25: throughput with continuation at least this share of the throughput without it. */
const TARGET_THROUGHPUT = 0.95;
/** Issue 25: at most this many more statements per step (a realistic run is one step). */
const TARGET_STATEMENTS_PER_STEP = 1;
const CURRENT = 'this build';

type Statements = { calls: number; runs: number };
export type CostResult = {
  baseline: string;
  figures: RealisticFigures[];
  statements: { current: Statements; baseline: Statements };
};

/** CPU ms a process has used (user + system), from /proc/<pid>/stat in clock ticks of 10 ms (Linux's 100 Hz). */
export function cpuMsOf(pid: number): () => number {
  return () => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of the file (utime, stime) are the 12th and 13th after the command name.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
}

/** Statements the database `name` has seen so far (the cluster preloads pg_stat_statements), and its runs. */
async function statements(statsUrl: string, name: string, url: string): Promise<Statements> {
  const calls = await withClient(statsUrl, (c) =>
    c.query<{ calls: string }>(
      `SELECT coalesce(sum(calls), 0) AS calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
      [name],
    ),
  );
  const runs = await withClient(url, (c) => c.query<{ n: number }>('SELECT count(*)::int AS n FROM runs'));
  return { calls: Number(calls.rows[0].calls), runs: runs.rows[0].n };
}

const since = (after: Statements, before: Statements) => ({
  calls: after.calls - before.calls,
  runs: after.runs - before.runs,
});

export async function benchContinuationCost(
  mains: { current: string; baseline: string },
  urls: { current: string; baseline: string; stats: string },
  progress: (what: string) => void,
): Promise<CostResult> {
  const dir = mains.baseline.replace(/\/dist\/src\/main\.js$/, '');
  let commit = dir;
  try {
    commit = execFileSync('git', ['-C', dir, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).trim();
  } catch {
    // Not a git checkout: the path names it.
  }
  const baselineName = `before issue 25 continuation (${commit})`;
  const env = (databaseUrl: string) => ({
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    // Every bench client shares one address (and a few owners): the fair shares are not what is measured.
    RATE_LIMIT_PER_MINUTE: '1000000',
    MAX_ACTIVE_RUNS_PER_OWNER: '1000000',
    MAX_READERS_PER_OWNER: '1000000',
  });
  const started: BuiltService[] = [];
  try {
    progress(`continuation cost: one replica of this build and one of ${commit}, each on its own database`);
    const current = await startBuiltService(env(urls.current), 60_000, mains.current);
    started.push(current);
    const baseline = await startBuiltService(env(urls.baseline), 60_000, mains.baseline);
    started.push(baseline);
    const dbName = (url: string) => new URL(url).pathname.slice(1);
    const count = () =>
      Promise.all([
        statements(urls.stats, dbName(urls.current), urls.current),
        statements(urls.stats, dbName(urls.baseline), urls.baseline),
      ]);
    const [currentBefore, baselineBefore] = await count();
    const figures = await benchRealistic(
      [
        { name: CURRENT, url: `${current.base}/run`, cpuMs: cpuMsOf(current.pid) },
        { name: baselineName, url: `${baseline.base}/run`, cpuMs: cpuMsOf(baseline.pid) },
      ],
      (what) => progress(`continuation cost: ${what}`),
    );
    const [currentAfter, baselineAfter] = await count();
    return {
      baseline: baselineName,
      figures,
      statements: {
        current: since(currentAfter, currentBefore),
        baseline: since(baselineAfter, baselineBefore),
      },
    };
  } finally {
    await Promise.all(started.map((s) => s.stop()));
  }
}

const perRun = (s: Statements) => s.calls / s.runs;

export function formatCost(r: CostResult): string {
  const { current, baseline } = r.statements;
  return [
    `Continuation cost (issue 25): this build against ${r.baseline}, built replicas taking turns`,
    formatRealistic(r.figures),
    `statements per run over the whole loop (pg_stat_statements, background included): ` +
      `this build ${perRun(current).toFixed(2)} (${current.calls} / ${current.runs} runs), ` +
      `before ${perRun(baseline).toFixed(2)} (${baseline.calls} / ${baseline.runs} runs)`,
  ].join('\n');
}

export function costTargets(r: CostResult): RatioRow[] {
  const rows: RatioRow[] = [];
  for (const f of r.figures.filter((x) => x.name === CURRENT)) {
    const b = r.figures.find((x) => x.name === r.baseline && x.n === f.n);
    if (!b) continue;
    const ratio = f.throughput / b.throughput;
    rows.push({
      name: `continuation: throughput, ${f.n} concurrent, realistic model`,
      figure: `${ratio.toFixed(3)}×`,
      target: `≥ ${TARGET_THROUGHPUT}× (before)`,
      met: ratio >= TARGET_THROUGHPUT,
      detail: `${f.throughput.toFixed(1)} / ${b.throughput.toFixed(1)} runs/s; CPU ms/run ${f.cpuMsPerRun.toFixed(2)} / ${b.cpuMsPerRun.toFixed(2)}`,
    });
  }
  const { current, baseline } = r.statements;
  const more = perRun(current) - perRun(baseline);
  rows.push({
    name: 'continuation: statements per one-step run, more than before',
    figure: `${more >= 0 ? '+' : ''}${more.toFixed(2)}`,
    target: `≤ ${TARGET_STATEMENTS_PER_STEP} per step`,
    met: more <= TARGET_STATEMENTS_PER_STEP,
    detail: `${perRun(current).toFixed(2)} / ${perRun(baseline).toFixed(2)} statements per run`,
  });
  return rows;
}
