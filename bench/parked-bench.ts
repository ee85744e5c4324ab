/**
 * Issue 25's parking targets (`BENCH_ONLY=parked`): 1,000 runs parked waiting for a frontend tool hold
 * under 5 MB on the replica, and a posted result resumes its run in under 200 ms p99.
 *
 * The runs go to a replica of their own in this process (same database, parking on), so the rest of
 * the bench keeps its configuration. Their clients are in a child process (bench/parked-client.ts)
 * that leaves once the runs started and exits (a disconnect grace keeps the runs alive): open client
 * sockets are a reader's cost, not a parked run's, and nothing of the client stays in this heap.
 * `PARKED_HEAPSNAPSHOTS=<dir>` writes a heap snapshot at each of the two readings (before.heapsnapshot,
 * parked.heapsnapshot), to compare in Chrome DevTools.
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

export type ParkedResult = {
  heapBefore: number;
  heapParked: number;
  /** Once every run was woken and ended, their clients gone. */
  heapEnded: number;
  rssBefore: number;
  rssParked: number;
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
 * Heap used after a full gc, and rss, in bytes, once the client's connections are closed here.
 * Finalizers run between the collections (what they release goes with the next).
 */
async function settledMemory(server: Server, snapshot: string): Promise<{ heap: number; rss: number }> {
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
  const { heapUsed, rss } = process.memoryUsage();
  const dir = process.env.PARKED_HEAPSNAPSHOTS;
  if (dir) writeHeapSnapshot(join(dir, `${snapshot}.heapsnapshot`));
  return { heap: heapUsed, rss };
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
    progress(`parked: starting ${RUNS} runs that wait for a frontend tool, their clients leaving`);
    const t0 = performance.now();
    const { ids } = await inClient({ type: 'park', base, count: RUNS, concurrency: CONCURRENCY }, 'parked');
    await parkedOf(ids);
    const parkMs = performance.now() - t0;
    const parked = await settledMemory(server, 'parked');
    const waiting = await parkedRuns(db, ids);
    progress(`parked: all ${RUNS} parked after ${Math.round(parkMs)} ms`);

    progress(`parked: waking ${WAKES} of them one at a time, then the rest unmeasured`);
    const { wakes } = await inClient(
      { type: 'wake', base, runs: waiting, measured: WAKES, concurrency: CONCURRENCY },
      'woken',
    );
    await endedOf(ids);
    const ended = await settledMemory(server, 'ended');
    return {
      heapEnded: ended.heap,
      heapBefore: before.heap,
      heapParked: parked.heap,
      rssBefore: before.rss,
      rssParked: parked.rss,
      parkMs,
      wakes,
    };
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

export function formatParked(r: ParkedResult): string {
  const mem = (name: string, before: number, after: number) =>
    `${name.padEnd(22)}${(before / MB).toFixed(1).padStart(12)}${(after / MB).toFixed(1).padStart(12)}${((after - before) / MB).toFixed(2).padStart(12)}${((after - before) / RUNS / 1024).toFixed(2).padStart(12)}`;
  return [
    `Parked runs (issue 25): ${RUNS} runs parked waiting for a frontend tool (all parked ${(r.parkMs / 1000).toFixed(1)} s after the first start)`,
    `${'memory'.padEnd(22)}${'before MB'.padStart(12)}${'after MB'.padStart(12)}${'difference MB'.padStart(12)}${'KB/run'.padStart(12)}`,
    mem('heap used after gc', r.heapBefore, r.heapParked),
    mem('rss', r.rssBefore, r.rssParked),
    mem('heap after gc, ended', r.heapBefore, r.heapEnded),
    `wake: result POST sent -> TOOL_CALL_RESULT on GET /runs/:runId/events (${r.wakes.length} runs, one at a time)`,
    `${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'max ms'.padStart(9)}`,
    `${quantile(r.wakes, 0.5).toFixed(1).padStart(9)}${quantile(r.wakes, 0.99).toFixed(1).padStart(9)}${Math.max(
      ...r.wakes,
    )
      .toFixed(1)
      .padStart(9)}`,
  ].join('\n');
}

export function parkedTargets(r: ParkedResult): RatioRow[] {
  const heap = (r.heapParked - r.heapBefore) / MB;
  const rss = (r.rssParked - r.rssBefore) / MB;
  const p99 = quantile(r.wakes, 0.99);
  const mb = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(2)} MB`;
  return [
    {
      name: `${RUNS} parked runs: heap after gc`,
      figure: mb(heap),
      target: `< ${TARGET_MEMORY_MB} MB`,
      met: heap < TARGET_MEMORY_MB,
      detail: `${((heap * 1024) / RUNS).toFixed(2)} KB per run`,
    },
    {
      name: `${RUNS} parked runs: rss`,
      figure: mb(rss),
      target: `< ${TARGET_MEMORY_MB} MB`,
      met: rss < TARGET_MEMORY_MB,
      detail: `${((rss * 1024) / RUNS).toFixed(2)} KB per run`,
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
