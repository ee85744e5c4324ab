import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { MAIN } from '../test/support/built-service';

/** Milliseconds from an event reaching the run's own client to it reaching a joiner, per joiner kind. */
export type ResumeResult = { sameInstance: number[]; crossInstance: number[]; runs: number };

const WORDS = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
/** Thirty deltas 20 ms apart: the run is live for about 0.7 s, each delta its own event. */
const PROMPT = `/slow 20 ${WORDS}`;

/** Reads an SSE response, noting when each event id arrived; resolves at the end of the stream. */
async function arrivals(res: Response, seen: Map<number, number>, first?: () => void): Promise<void> {
  if (!res.ok || !res.body) throw new Error(`stream refused: ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    const at = performance.now();
    first?.();
    first = undefined;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (frame.startsWith('id: ')) seen.set(Number(frame.slice(4, frame.indexOf('\n'))), at);
    }
  }
}

/**
 * One run on `runBase`, joined (from its first event) on `joinBase` once the run's own client got
 * RUN_STARTED; returns the delay of each event the joiner got live (produced after it had caught up).
 */
async function joinedRun(runBase: string, joinBase: string): Promise<number[]> {
  const runId = `resume-${randomUUID()}`;
  const original = new Map<number, number>();
  let started!: () => void;
  const runStarted = new Promise<void>((resolve) => (started = resolve));
  const res = await fetch(`${runBase}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId: `resume-${randomUUID()}`,
      runId,
      messages: [{ id: randomUUID(), role: 'user', content: PROMPT }],
      tools: [],
      context: [],
    }),
  });
  const own = arrivals(res, original, started);
  await runStarted;
  const joined = new Map<number, number>();
  let live = Infinity;
  const join = await fetch(`${joinBase}/runs/${encodeURIComponent(runId)}/events`, {
    headers: { accept: 'text/event-stream' },
  });
  const joiner = arrivals(join, joined, () => (live = performance.now()));
  await Promise.all([own, joiner]);
  if (joined.size !== original.size) throw new Error(`joiner got ${joined.size} of ${original.size} events`);
  const delays: number[] = [];
  for (const [id, at] of original) if (at > live) delays.push(joined.get(id)! - at);
  return delays;
}

/**
 * Another replica, as in a deployment: the built service (`node dist/src/main.js`) in a process of
 * its own on the same database; `fn` gets its API base. It drains and stops afterwards.
 */
export async function withReplica<T>(
  databaseUrl: string,
  prefix: string,
  fn: (base: string) => Promise<T>,
): Promise<T> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      IO_BRIDGE_PREFIX: prefix,
      MODEL: 'scripted',
      LOG_LEVEL: 'warn',
      MIGRATIONS_RUN: 'false',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const origin = `http://127.0.0.1:${port}`;
  try {
    for (let ready = false; !ready;) {
      if (child.exitCode !== null) throw new Error(`the replica exited (${child.exitCode})`);
      ready = await fetch(`${origin}/health/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (!ready) await new Promise((r) => setTimeout(r, 100));
    }
    return await fn(`${origin}${prefix}`);
  } finally {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
}

/** `rounds` rounds of `concurrent` runs on A, each joined on A (same instance) or B (another replica). */
export async function benchResume(
  baseA: string,
  baseB: string,
  rounds = 5,
  concurrent = 20,
): Promise<ResumeResult> {
  await Promise.all([joinedRun(baseA, baseB), joinedRun(baseA, baseA)]);
  const sameInstance: number[] = [];
  const crossInstance: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const batch = await Promise.all(
      Array.from({ length: concurrent }, (_, i) =>
        joinedRun(baseA, i % 2 ? baseB : baseA).then((delays) => ({ cross: i % 2 === 1, delays })),
      ),
    );
    for (const { cross, delays } of batch) (cross ? crossInstance : sameInstance).push(...delays);
  }
  return { sameInstance, crossInstance, runs: rounds * concurrent };
}

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN;

/** The joiner-delay table, with the issue 13 target (cross-replica p99 < 50 ms). */
export function formatResume(r: ResumeResult): string {
  const row = (label: string, samples: number[]) => {
    const s = [...samples].sort((a, b) => a - b);
    const f = (v: number) => `${v.toFixed(1)} ms`.padStart(9);
    return `${label.padEnd(38)}${String(s.length).padStart(8)}${f(percentile(s, 50))}${f(percentile(s, 99))}${f(s.at(-1) ?? NaN)}`;
  };
  const cross = [...r.crossInstance].sort((a, b) => a - b);
  const p99 = percentile(cross, 99);
  return [
    `resumable runs: a joiner's delay behind the run's own client (${r.runs} runs of ${PROMPT.split(' ').length - 2} deltas 20 ms apart, 20 at once)`,
    `${'joiner'.padEnd(38)}${'events'.padStart(8)}${'p50'.padStart(9)}${'p99'.padStart(9)}${'max'.padStart(9)}`,
    row('same instance (from memory)', r.sameInstance),
    row('other replica, own process (NOTIFY)', r.crossInstance),
    `cross-instance p99 ${p99.toFixed(1)} ms (target < 50 ms: ${p99 < 50 ? 'met' : 'MISSED'})`,
  ].join('\n');
}
