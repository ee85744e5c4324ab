/**
 * Issue 25's parking targets (`BENCH_ONLY=parked`): 1,000 runs parked waiting for a frontend tool hold
 * under 5 MB resident on the replica, and a posted result resumes its run in under 200 ms p99.
 *
 * The runs go to a replica of their own in this process (same database, parking on), so the rest of
 * the bench keeps its configuration. Their clients are in a child process (bench/parked-client.ts)
 * that leaves once the runs started and exits (a disconnect grace keeps the runs alive): open client
 * sockets are a reader's cost, not a parked run's, and nothing of the client stays in this heap.
 *
 * Cycles of 1,000 runs (started, parked, woken, ended; 4, or `PARKED_CYCLES`). The first ones bring
 * the process to the high-water of 1,000 live runs (glibc malloc and V8 keep pages once touched), so
 * rss read in the last, against the end of the one before, is what parked runs hold, not what
 * starting them left, unless glibc malloc's high-water still rises with each 1,000 runs started (its
 * arenas, one per thread: `MALLOC_ARENA_MAX=2` holds it still; the max rss column shows it).
 * `PARKED_HEAPSNAPSHOTS=<dir>` writes a heap snapshot at each reading (<reading>.heapsnapshot).
 */
import { fork } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeHeapSnapshot } from 'node:v8';
import { Client } from 'pg';
import { createApp } from '../src/app.factory';
import type { AppConfig } from '../src/config/config';
import { ACTIVE } from '../src/runs/storage/run.entity';
import type { ClientAnswer, ClientTask, Waiting } from './parked-client';
import type { RatioRow } from './ratios';

const RUNS = 1000;
/** Runs parked and woken before the baseline. */
const WARM_RUNS = 100;
const WAKES = 200;
/** How many runs are started (or woken, unmeasured) at once. */
const CONCURRENCY = 50;
const PARK_AFTER_MS = 200;
const TARGET_MEMORY_MB = 5;
const TARGET_WAKE_P99_MS = 200;
const CYCLES = Math.max(2, Number(process.env.PARKED_CYCLES ?? 4));

/** One reading after gc, in bytes; `maxRss` is the process's high-water so far. */
export type Reading = { heap: number; heapTotal: number; external: number; rss: number; maxRss: number };

/** A cycle's readings: its 1,000 runs parked, then all woken and ended. */
export type Cycle = { parked: Reading; ended: Reading };

export type ParkedResult = {
  /** After 100 runs parked and woken. */
  before: Reading;
  cycles: Cycle[];
  /** The first cycle's. */
  parkMs: number;
  wakes: number[];
};

/** Runs `task` in a fresh client process; resolves with its answer once it exited. */
function inClient<A extends ClientAnswer['type']>(
  task: ClientTask,
  answer: A,
): Promise<Extract<ClientAnswer, { type: A }>> {
  const child = fork(join(__dirname, 'parked-client.js'), ['--parked-client'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.send(task);
  return new Promise((resolve, reject) => {
    let got: ClientAnswer | undefined;
    child.once('message', (m) => (got = m as ClientAnswer));
    child.once('exit', (code) => {
      if (got?.type === answer && code === 0) resolve(got as Extract<ClientAnswer, { type: A }>);
      else reject(new Error(`parked client (exit ${code}): ${JSON.stringify(got ?? 'no answer')}`));
    });
  });
}

/** Polls until `query` (a count over the runs' ids) gives `want`. */
async function countReaches(db: Client, sql: string, ids: string[], want: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ n: number }>(sql, [ids]);
    if (rows[0].n === want) return;
    if (Date.now() > deadline) throw new Error(`${sql}: ${rows[0].n}, not ${want}, after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The call each parked run waits for, and its last stored event (TOOL_CALL_END). */
async function parkedRuns(db: Client, ids: string[]): Promise<Waiting[]> {
  const { rows } = await db.query<Waiting>(
    `SELECT id AS "runId", parked AS "toolCallId", (SELECT max(last_seq) FROM run_events WHERE run_id = runs.id) AS "lastId"
       FROM runs WHERE id = ANY($1)`,
    [ids],
  );
  return rows;
}

/**
 * Heap used after a full gc, and rss, once the client's connections are closed here. Finalizers run
 * between the collections (what they release goes with the next).
 */
async function settledMemory(server: Server, snapshot: string): Promise<Reading> {
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
    );
  while ((await connections()) > 0) await new Promise((r) => setTimeout(r, 20));
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
  globalThis.gc?.();
  const { heapUsed, heapTotal, external, rss } = process.memoryUsage();
  const maxRss = process.resourceUsage().maxRSS * 1024;
  const dir = process.env.PARKED_HEAPSNAPSHOTS;
  if (dir) writeHeapSnapshot(join(dir, `${snapshot}.heapsnapshot`));
  return { heap: heapUsed, heapTotal, external, rss, maxRss };
}

export async function benchParked(
  config: AppConfig,
  progress: (what: string) => void,
): Promise<ParkedResult> {
  const app = await createApp({ ...config, runParkAfterMs: PARK_AFTER_MS, frontendToolTimeoutMs: 3_600_000 });
  await app.listen(0, '127.0.0.1');
  const server: Server = app.getHttpServer();
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${config.prefix}`;
  const db = new Client({ connectionString: config.database.url });
  await db.connect();
  const parkedOf = (ids: string[]) =>
    countReaches(
      db,
      'SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND parked IS NOT NULL',
      ids,
      ids.length,
      120_000,
    );
  const endedOf = (ids: string[]) =>
    countReaches(db, `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND ${ACTIVE}`, ids, 0, 120_000);
  try {
    // Warm the paths (runs parked and woken, as many at once as later) before the baseline: the code
    // compiled on the way (megabytes) is then mostly in the baseline, not in the figure.
    const warm = await inClient({ type: 'park', base, count: WARM_RUNS, concurrency: CONCURRENCY }, 'parked');
    await parkedOf(warm.ids);
    const warmRuns = await parkedRuns(db, warm.ids);
    await inClient({ type: 'wake', base, runs: warmRuns, measured: 0, concurrency: CONCURRENCY }, 'woken');
    await endedOf(warm.ids);

    const before = await settledMemory(server, 'before');
    const cycles: Cycle[] = [];
    let parkMs = 0;
    let wakes: number[] = [];
    for (let c = 1; c <= CYCLES; c++) {
      progress(`parked: cycle ${c} of ${CYCLES}: starting ${RUNS} runs that wait for a frontend tool`);
      const t0 = performance.now();
      const { ids } = await inClient({ type: 'park', base, count: RUNS, concurrency: CONCURRENCY }, 'parked');
      await parkedOf(ids);
      if (c === 1) parkMs = performance.now() - t0;
      const parked = await settledMemory(server, `parked-${c}`);
      const waiting = await parkedRuns(db, ids);
      // The first cycle times 200 wakes, one at a time; the rest are woken unmeasured.
      const measured = c === 1 ? WAKES : 0;
      progress(`parked: all ${RUNS} parked after ${Math.round(performance.now() - t0)} ms; waking them`);
      const woken = await inClient(
        { type: 'wake', base, runs: waiting, measured, concurrency: CONCURRENCY },
        'woken',
      );
      if (c === 1) wakes = woken.wakes;
      await endedOf(ids);
      cycles.push({ parked, ended: await settledMemory(server, `ended-${c}`) });
    }
    return { before, cycles, parkMs, wakes };
  } finally {
    await db.end();
    await app.close();
  }
}

const MB = 1024 * 1024;
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** The last cycle's 1,000 parked against nothing parked before it (the end of the cycle before). */
function steady(r: ParkedResult): { idle: Reading; parked: Reading; ended: Reading } {
  const last = r.cycles[r.cycles.length - 1];
  return { idle: r.cycles[r.cycles.length - 2].ended, parked: last.parked, ended: last.ended };
}

export function formatParked(r: ParkedResult): string {
  const mb = (v: number) => (v / MB).toFixed(1).padStart(11);
  const diff = (v: number) => `${v >= 0 ? '+' : ''}${(v / MB).toFixed(2)}`.padStart(11);
  const row = (name: string, from: Reading, to: Reading) =>
    `${name.padEnd(44)}${diff(to.rss - from.rss)}${diff(to.heap - from.heap)}${diff(to.heapTotal - from.heapTotal)}${diff(to.external - from.external)}${diff(to.maxRss - from.maxRss)}`;
  const reading = (name: string, m: Reading) =>
    `${name.padEnd(44)}${mb(m.rss)}${mb(m.heap)}${mb(m.heapTotal)}${mb(m.external)}${mb(m.maxRss)}`;
  const columns = ['rss MB', 'heap MB', 'V8 heap MB', 'external MB', 'max rss MB']
    .map((c) => c.padStart(11))
    .join('');
  const s = steady(r);
  const n = r.cycles.length;
  return [
    `Parked runs (issue 25): ${n} cycles of ${RUNS} runs parked waiting for a frontend tool, then woken (first all parked ${(r.parkMs / 1000).toFixed(1)} s after its first start)`,
    `${'reading (heap used after gc)'.padEnd(44)}${columns}`,
    reading(`${WARM_RUNS} runs parked and ended`, r.before),
    ...r.cycles.flatMap((c, i) => [
      reading(`cycle ${i + 1}: ${RUNS} parked`, c.parked),
      reading(`cycle ${i + 1}: all ended (nothing parked)`, c.ended),
    ]),
    `${'difference'.padEnd(44)}${columns}`,
    row(`target: ${RUNS} parked - nothing parked (${n})`, s.idle, s.parked),
    row(`cycle ${n}: ended - nothing parked before`, s.idle, s.ended),
    row(`cycle ${n}: ${RUNS} parked - ended after`, s.ended, s.parked),
    row(`cycle 1: ${RUNS} parked - ${WARM_RUNS} ended`, r.before, r.cycles[0].parked),
    row(`cycle 1: all ended - ${WARM_RUNS} ended`, r.before, r.cycles[0].ended),
    `wake: result POST sent -> TOOL_CALL_RESULT on GET /runs/:runId/events (${r.wakes.length} runs, one at a time, cycle 1)`,
    `${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`,
    `${quantile(r.wakes, 0.5).toFixed(1).padStart(9)}${quantile(r.wakes, 0.99).toFixed(1).padStart(9)}${Math.max(
      ...r.wakes,
    )
      .toFixed(1)
      .padStart(9)}`,
  ].join('\n');
}

export function parkedTargets(r: ParkedResult): RatioRow[] {
  const s = steady(r);
  const rss = (s.parked.rss - s.idle.rss) / MB;
  const heap = (s.parked.heap - s.idle.heap) / MB;
  const firstHeap = (r.cycles[0].parked.heap - r.before.heap) / MB;
  const p99 = quantile(r.wakes, 0.99);
  const mb = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(2)} MB`;
  const perRun = (v: number) => `${((v * 1024) / RUNS).toFixed(2)} KB per run`;
  return [
    {
      name: `${RUNS} parked runs: rss, cycle ${r.cycles.length}`,
      figure: mb(rss),
      target: `< ${TARGET_MEMORY_MB} MB`,
      met: rss < TARGET_MEMORY_MB,
      detail: `${(s.idle.rss / MB).toFixed(1)} -> ${(s.parked.rss / MB).toFixed(1)} MB; max rss ${mb((s.parked.maxRss - s.idle.maxRss) / MB)}`,
    },
    {
      name: `${RUNS} parked runs: heap after gc, cycle ${r.cycles.length}`,
      figure: mb(heap),
      target: `< ${TARGET_MEMORY_MB} MB`,
      met: heap < TARGET_MEMORY_MB,
      detail: `${perRun(heap)}; cycle 1 ${mb(firstHeap)}`,
    },
    {
      name: 'wake: result POST -> TOOL_CALL_RESULT p99',
      figure: `${p99.toFixed(1)} ms`,
      target: `< ${TARGET_WAKE_P99_MS} ms`,
      met: p99 < TARGET_WAKE_P99_MS,
      detail: `p50 ${quantile(r.wakes, 0.5).toFixed(1)} ms, ${r.wakes.length} wakes`,
    },
  ];
}
