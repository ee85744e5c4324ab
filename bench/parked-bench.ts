/**
 * Issue 25's parking targets (`BENCH_ONLY=parked`): 1,000 runs parked waiting for a frontend tool hold
 * under 5 MB on the replica, and a posted result resumes its run in under 200 ms p99.
 *
 * The runs go to a replica of their own in this process (same database, parking on), so the rest of
 * the bench keeps its configuration. Their clients leave once the tool call is shown (a disconnect
 * grace keeps the runs alive): open client sockets are a reader's cost, not a parked run's.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { createApp } from '../src/app.factory';
import type { AppConfig } from '../src/config/config';
import { ACTIVE } from '../src/runs/storage/run.entity';
import type { RatioRow } from './ratios';

const RUNS = 1000;
const WAKES = 200;
/** How many runs are started (or woken, unmeasured) at once. */
const CONCURRENCY = 50;
const PARK_AFTER_MS = 200;
const TARGET_MEMORY_MB = 5;
const TARGET_WAKE_P99_MS = 200;
const PICK = { name: 'pick', description: 'pick one', parameters: { type: 'object', properties: {} } };

type SseEvent = { type: string; toolCallId?: string };
type Frame = { id: number; event: SseEvent };
type Waiting = { runId: string; toolCallId: string; lastId: number };

export type ParkedResult = {
  heapBefore: number;
  heapParked: number;
  rssBefore: number;
  rssParked: number;
  parkMs: number;
  wakes: number[];
};

/** Reads SSE frames until `stop` says so (or the stream ends), then lets the connection go. */
async function readUntil(res: Response, abort: AbortController, stop: (f: Frame) => boolean): Promise<Frame> {
  if (!res.ok || !res.body) throw new Error(`stream refused: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error('stream ended early');
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const id = /^id: (\d+)$/m.exec(block);
        const data = /^data: (.*)$/m.exec(block);
        if (!id || !data) continue; // pings, and notices that are not in the log
        const frame = { id: Number(id[1]), event: JSON.parse(data[1]) as SseEvent };
        if (stop(frame)) return frame;
      }
    }
  } finally {
    abort.abort();
  }
}

/** A stored run that calls the frontend tool `pick`; its client leaves once it started. */
async function startWaiting(base: string): Promise<string> {
  const threadId = `parked-${randomUUID()}`;
  const runId = `parked-${randomUUID()}`;
  const abort = new AbortController();
  const res = await fetch(`${base}/run`, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId,
      messages: [{ id: randomUUID(), role: 'user', content: '/tool pick {}' }],
      tools: [PICK],
      context: [],
      forwardedProps: { memory: { thread: threadId }, disconnectGraceMs: 600_000 },
    }),
  });
  await readUntil(res, abort, () => true);
  return runId;
}

/**
 * Posts the result of a parked run's call; resolves with ms from the POST to TOOL_CALL_RESULT on its
 * stream. The stream is opened first, from the call's last event (TOOL_CALL_END): that event arriving
 * says the reader follows the run, and the POST goes then.
 */
async function wake(base: string, run: Waiting): Promise<number> {
  const abort = new AbortController();
  const res = await fetch(`${base}/runs/${encodeURIComponent(run.runId)}/events`, {
    signal: abort.signal,
    headers: { accept: 'text/event-stream', 'last-event-id': String(run.lastId - 1) },
  });
  let t0 = NaN;
  let posted: Promise<Response> | undefined;
  await readUntil(res, abort, (f) => {
    if (f.id === run.lastId && !posted) {
      t0 = performance.now();
      posted = fetch(`${base}/runs/${run.runId}/tool-calls/${run.toolCallId}/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'blue' }),
      });
    }
    return f.event.type === 'TOOL_CALL_RESULT';
  });
  const ms = performance.now() - t0;
  const answer = await posted!;
  if (answer.status !== 202) throw new Error(`result refused: ${answer.status} ${await answer.text()}`);
  return ms;
}

/** `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return out;
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

/** Heap used after a full gc, and rss, in bytes. */
function settledMemory(): { heap: number; rss: number } {
  for (let i = 0; i < 3; i++) globalThis.gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  return { heap: heapUsed, rss };
}

export async function benchParked(
  config: AppConfig,
  progress: (what: string) => void,
): Promise<ParkedResult> {
  const app = await createApp({ ...config, runParkAfterMs: PARK_AFTER_MS, frontendToolTimeoutMs: 3_600_000 });
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}${config.prefix}`;
  const db = new Client({ connectionString: config.database.url });
  await db.connect();
  try {
    // Warm the paths (a few runs parked and woken) before the baseline.
    const warmIds = await pool(Array.from({ length: 10 }), 10, () => startWaiting(base));
    await countReaches(
      db,
      'SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND parked IS NOT NULL',
      warmIds,
      warmIds.length,
      30_000,
    );
    for (const run of await parkedRuns(db, warmIds)) await wake(base, run);

    const before = settledMemory();
    progress(`parked: starting ${RUNS} runs that wait for a frontend tool, their clients leaving`);
    const t0 = performance.now();
    const ids = await pool(Array.from({ length: RUNS }), CONCURRENCY, () => startWaiting(base));
    await countReaches(
      db,
      'SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND parked IS NOT NULL',
      ids,
      RUNS,
      120_000,
    );
    const parkMs = performance.now() - t0;
    const parked = settledMemory();
    const waiting = await parkedRuns(db, ids);
    progress(`parked: all ${RUNS} parked after ${Math.round(parkMs)} ms`);

    progress(`parked: waking ${WAKES} of them one at a time, then the rest unmeasured`);
    const wakes: number[] = [];
    for (const run of waiting.slice(0, WAKES)) wakes.push(await wake(base, run));
    progress(`parked: ${WAKES} woken`);
    await pool(waiting.slice(WAKES), CONCURRENCY, (run) => wake(base, run));
    await countReaches(
      db,
      `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND ${ACTIVE}`,
      ids,
      0,
      120_000,
    );
    return {
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
    `${'memory'.padEnd(22)}${'before MB'.padStart(12)}${'parked MB'.padStart(12)}${'difference MB'.padStart(12)}${'KB/run'.padStart(12)}`,
    mem('heap used after gc', r.heapBefore, r.heapParked),
    mem('rss', r.rssBefore, r.rssParked),
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
