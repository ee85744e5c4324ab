/**
 * The baseline guard (bench/README.md, "Baseline guard"): this build against the pinned baseline build
 * of bench/baseline.json, each a replica of its own (`node dist/src/main.js`) on a database of its
 * own in the same cluster, the same environment, the same clients, taking turns round by round (the
 * one that goes first alternates). Two figures, each with a limit: throughput of `/bench 5000` runs
 * back to back (deltas/s, at least 0.95× the baseline's) and p99 time to first content of 100 runs
 * of `/bench 20` started at once (at most 1.05× the baseline's). The persisting `@ag-ui/mastra` peer
 * (bench/realistic-bench.ts) is timed with the same latency client and printed beside them.
 * A missed limit fails the bench: `run-bench.ts` prints the banner and exits 1.
 */
import type { Agent } from '@mastra/core/agent';
import { MAIN, startBuiltService, type BuiltService } from '../test/support/built-service';
import { baselineBuild, BaselineError, type BaselineBuild } from './baseline-build';
import { cpuMsOf } from './continuation-cost';
import { withClient } from './db-cost';
import type { LeanSample } from './lean-client';
import { PERSISTING_PEER, startPersistingAgUi } from './realistic-bench';
import { fetchRun } from './sse-client';

const DELTAS = 5000;
const CONCURRENT = 100;
/** Current throughput at least this share of the baseline's. */
const THROUGHPUT_LIMIT = 0.95;
/** Current p99 time to first content at most this multiple of the baseline's. */
const P99_LIMIT = 1.05;

/** The warm-connection latency client of run-bench.ts in a child process: one round of 100 runs of `/bench 20` at once. */
export type WarmClient = { round: () => Promise<LeanSample[]>; close: () => Promise<void>; kill: () => void };

export type GuardRow = {
  figure: string;
  unit: string;
  baseline: number;
  current: number;
  ratio: number;
  limit: string;
  pass: boolean;
};

export type GuardResult = {
  build: BaselineBuild;
  rounds: number;
  runs: number;
  /** Extra variables of the current replica only (BENCH_BASELINE_CURRENT_ENV), to check the guard itself. */
  currentEnv: Record<string, string>;
  rows: GuardRow[];
  p50: { baseline: number; current: number; peer: number };
  peerP99: number;
  /** current / baseline in each round alone: their spread shows how noisy the run was. */
  perRound: { throughput: number[]; p99: number[] };
  /** Deltas per CPU-second of each replica over all its throughput runs (its own CPU, from /proc): steadier under load. */
  cpuRate: { baseline: number; current: number };
  seconds: number;
};

/** A count from the environment: `fallback` when unset. */
function count(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new BaselineError(`${name} must be a whole number of at least 1, not '${raw}'`);
  return n;
}

/** `NAME=value,NAME=value`: variables the current replica gets on top of the shared ones. */
function currentEnv(): Record<string, string> {
  const raw = process.env.BENCH_BASELINE_CURRENT_ENV ?? '';
  return Object.fromEntries(
    raw
      .split(',')
      .filter((pair) => pair.trim())
      .map((pair) => {
        const at = pair.indexOf('=');
        if (at < 1) throw new BaselineError(`BENCH_BASELINE_CURRENT_ENV: '${pair}' is not NAME=value`);
        return [pair.slice(0, at).trim(), pair.slice(at + 1)];
      }),
  );
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
/** Nearest-rank percentile, as the other parts. */
const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
};
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const collect = () => globalThis.gc?.();
const times = (r: number) => `${r.toFixed(2)}×`;
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A build's samples, one array per round. */
type Side = {
  name: 'baseline' | 'current';
  url: string;
  warm: WarmClient;
  rates: number[][];
  first: number[][];
  cpuMs: () => number;
  /** CPU ms the replica used over its measured throughput runs. */
  spent: number;
};

/**
 * Runs the guard. `clusterUrl` is the bench's database: the three databases of the part are made
 * beside it and dropped after. `agent` is the bench's assistant, which the persisting peer forks.
 */
export async function benchBaselineGuard(deps: {
  agent: Agent;
  clusterUrl: string;
  warmClient: (url: string) => Promise<WarmClient>;
  progress: (what: string) => void;
}): Promise<GuardResult> {
  const { agent, clusterUrl, warmClient, progress } = deps;
  const t0 = Date.now();
  const rounds = count('BENCH_BASELINE_ROUNDS', 3);
  const runs = count('BENCH_BASELINE_RUNS', 5);
  const extra = currentEnv();
  const build = baselineBuild(progress);

  const names = ['baseline', 'current', 'peer'].map((side) => `bench_guard_${process.pid}_${side}`);
  const url = (database: string) => {
    const u = new URL(clusterUrl);
    u.pathname = `/${database}`;
    return u.toString();
  };
  const drop = () =>
    withClient(clusterUrl, async (c) => {
      for (const name of names) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });
  await drop();
  await withClient(clusterUrl, async (c) => {
    for (const name of names) await c.query(`CREATE DATABASE ${name}`);
  });
  // The same variables for both builds; the caps per owner and address lifted as in run-bench.ts:
  // every client of the bench is one address and a few owners, and a 429 is not what is measured.
  const env = (database: string) => ({
    DATABASE_URL: url(database),
    MODEL: 'scripted',
    OPENAI_BASE_URL: '',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000',
    MAX_ACTIVE_RUNS_PER_OWNER: '1000000',
    MAX_READERS_PER_OWNER: '1000000',
  });
  const services: BuiltService[] = [];
  const clients: WarmClient[] = [];
  let peer: { url: string; close: () => Promise<void> } | undefined;
  try {
    progress(`baseline: starting the baseline ${build.short} and this build, each on its own database`);
    const baseline = await startBuiltService(env(names[0]), 60_000, build.main).catch((err: Error) => {
      // One line: the message's first line (why) and the build's last line of output.
      const lines = err.message.split('\n').filter((l) => l.trim());
      throw new BaselineError(`the baseline ${build.short} did not start: ${lines[0]} ${lines.at(-1) ?? ''}`);
    });
    services.push(baseline);
    const current = await startBuiltService({ ...env(names[1]), ...extra }, 60_000, MAIN);
    services.push(current);
    peer = await startPersistingAgUi(agent, url(names[2]));
    const side = async (name: Side['name'], service: BuiltService): Promise<Side> => {
      const runUrl = `${service.base}/run`;
      const warm = await warmClient(runUrl);
      clients.push(warm);
      return { name, url: runUrl, warm, rates: [], first: [], cpuMs: cpuMsOf(service.pid), spent: 0 };
    };
    const sides = [await side('baseline', baseline), await side('current', current)];
    const peerWarm = await warmClient(peer.url);
    clients.push(peerWarm);
    const peerFirst: number[] = [];

    const stream = async (s: Side) => {
      collect();
      const sample = await fetchRun(s.url, `/bench ${DELTAS}`);
      if (sample.deltas !== DELTAS) throw new Error(`${s.name}: ${sample.deltas} deltas, expected ${DELTAS}`);
      return (sample.deltas / sample.ms) * 1000;
    };
    // A content never seen counts as never (it ranks last).
    const firsts = (samples: LeanSample[]) =>
      samples.map((x) => (Number.isNaN(x.firstDelta) ? Infinity : x.firstDelta));
    const burst = async (client: WarmClient) => {
      collect();
      const samples = await client.round();
      await sleep(100);
      return firsts(samples);
    };

    progress('baseline: warm-up (5 runs of /bench 5000 each, one round of 100 at once each)');
    for (const s of sides) for (let i = 0; i < 5; i++) await stream(s);
    for (const client of clients) await burst(client);
    for (let round = 0; round < rounds; round++) {
      // Each round the other build goes first: what a run leaves behind (garbage, database work)
      // falls on each side equally often.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      progress(
        `baseline: round ${round + 1}/${rounds}, ${order.map((s) => s.name).join(' then ')}: ` +
          `${runs} runs of /bench ${DELTAS} each, then ${CONCURRENT} of /bench 20 at once each and the persisting peer`,
      );
      for (const s of order) {
        s.rates.push([]);
        const cpu = s.cpuMs();
        for (let i = 0; i < runs; i++) s.rates[round].push(await stream(s));
        s.spent += s.cpuMs() - cpu;
      }
      for (const s of order) s.first.push(await burst(s.warm));
      peerFirst.push(...(await burst(peerWarm)));
    }
    for (const client of clients.splice(0)) await client.close();

    const [b, c] = sides;
    const all = (rounds: number[][]) => rounds.flat();
    const throughput = { baseline: median(all(b.rates)), current: median(all(c.rates)) };
    const p99 = { baseline: percentile(all(b.first), 99), current: percentile(all(c.first), 99) };
    const perRound = {
      throughput: c.rates.map((r, i) => median(r) / median(b.rates[i])),
      p99: c.first.map((r, i) => percentile(r, 99) / percentile(b.first[i], 99)),
    };
    const rows: GuardRow[] = [
      {
        figure: `throughput, /bench ${DELTAS} back to back (median deltas/s)`,
        unit: 'deltas/s',
        ...throughput,
        ratio: throughput.current / throughput.baseline,
        limit: `≥ ${THROUGHPUT_LIMIT}×`,
        pass: throughput.current >= THROUGHPUT_LIMIT * throughput.baseline,
      },
      {
        figure: `first content p99, ${CONCURRENT} runs of /bench 20 at once (ms)`,
        unit: 'ms',
        ...p99,
        ratio: p99.current / p99.baseline,
        limit: `≤ ${P99_LIMIT}×`,
        pass: p99.current <= P99_LIMIT * p99.baseline,
      },
    ];
    return {
      build,
      rounds,
      runs,
      currentEnv: extra,
      rows,
      p50: {
        baseline: percentile(all(b.first), 50),
        current: percentile(all(c.first), 50),
        peer: percentile(peerFirst, 50),
      },
      perRound,
      cpuRate: {
        baseline: (DELTAS * runs * rounds * 1000) / b.spent,
        current: (DELTAS * runs * rounds * 1000) / c.spent,
      },
      peerP99: percentile(peerFirst, 99),
      seconds: (Date.now() - t0) / 1000,
    };
  } finally {
    for (const client of clients) client.kill();
    await peer?.close();
    await Promise.all(services.map((s) => s.stop()));
    await drop();
  }
}

export function formatBaselineGuard(r: GuardResult): string {
  const w = Math.max(...r.rows.map((row) => row.figure.length)) + 2;
  const base = `baseline ${r.build.short}`;
  const line = (
    figure: string,
    baseline: string,
    current: string,
    ratio: string,
    limit: string,
    verdict: string,
  ) =>
    `${figure.padEnd(w)}${baseline.padStart(base.length + 2)}${current.padStart(11)}${ratio.padStart(18)}  ${limit.padEnd(9)}${verdict}`;
  const digits = (row: GuardRow) => (row.unit === 'ms' ? 1 : 0);
  const extra = Object.entries(r.currentEnv).map(([k, v]) => `${k}=${v}`);
  return [
    `Baseline guard: this build against the pinned baseline ${r.build.short} (pinned ${r.build.pinned}: ${r.build.why})`,
    `built replicas on databases of their own in one cluster; ${r.rounds} round${r.rounds === 1 ? '' : 's'}, each side's turn alternating first; ` +
      `${r.runs} runs of /bench ${DELTAS} and ${CONCURRENT} runs at once per side per round; the part took ${fmt(r.seconds)} s`,
    ...(extra.length
      ? [
          `the current replica ran with ${extra.join(' ')} (BENCH_BASELINE_CURRENT_ENV): a check of the guard, not a figure of this build`,
        ]
      : []),
    line('figure', base, 'current', 'current/baseline', 'limit', 'verdict'),
    ...r.rows.map((row) =>
      line(
        row.figure,
        fmt(row.baseline, digits(row)),
        fmt(row.current, digits(row)),
        `${row.ratio.toFixed(3)}×`,
        row.limit,
        row.pass ? 'pass' : 'FAIL',
      ),
    ),
    `first content p50: baseline ${fmt(r.p50.baseline, 1)} ms, current ${fmt(r.p50.current, 1)} ms`,
    `by each replica's own CPU time (no limit; steadier under load): baseline ${fmt(r.cpuRate.baseline)}, ` +
      `current ${fmt(r.cpuRate.current)} deltas/CPU-s, ${times(r.cpuRate.current / r.cpuRate.baseline)}`,
    `each round alone, current/baseline: throughput ${r.perRound.throughput.map(times).join(', ')}; ` +
      `first content p99 ${r.perRound.p99.map(times).join(', ')} (their spread is this run's noise)`,
    `${PERSISTING_PEER}, the same client: first content p99 ${fmt(r.peerP99, 1)} ms (p50 ${fmt(r.p50.peer, 1)} ms); ` +
      `service / peer p99: current ${(r.rows[1].current / r.peerP99).toFixed(2)}×, baseline ${(r.rows[1].baseline / r.peerP99).toFixed(2)}×`,
  ].join('\n');
}

/** The banner of a failed guard, naming each figure past its limit; undefined when every figure passed. */
export function guardFailure(r: GuardResult): string | undefined {
  const failed = r.rows.filter((row) => !row.pass);
  if (!failed.length) return undefined;
  return `BASELINE GUARD FAILED: ${failed
    .map(
      (row) =>
        `${row.figure} is ${row.ratio.toFixed(3)}× the baseline ${r.build.short}'s ` +
        `(${fmt(row.current, 1)} against ${fmt(row.baseline, 1)} ${row.unit}; limit ${row.limit})`,
    )
    .join('; ')}`;
}
