/**
 * The service against what a team would otherwise pick, with a realistic model. The scripted model is paced
 * like a remote one (`/bench <n> <first-ms> <gap-ms>`: 200 to 500 ms to the first token, drawn per
 * run, then 20 ms between tokens). N clients (100, then 500) each run one run after another over a
 * warm keep-alive connection for a fixed time (a closed loop: N runs in flight at every moment).
 * Subjects: the service, and a plain `@ag-ui/mastra` server (node:http + `MastraAgent` + `EventEncoder`) around the same Mastra agent and model.
 *
 * Figures: time to first content (the first TEXT_MESSAGE_CONTENT, or TEXT_MESSAGE_CHUNK for the
 * plain server, from the request's write) p50/p99 over every run sent in the window, and throughput:
 * with N runs offered at every moment, the runs sent within the window that completed, over the time
 * until the last of them ended (completed runs per second under a fixed offered load).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import type { RunAgentInput } from '@ag-ui/core';
import { EventEncoder } from '@ag-ui/encoder';
import { MastraAgent } from '@ag-ui/mastra';
import type { Agent } from '@mastra/core/agent';
import { Memory } from '@mastra/memory';
import { PostgresStore } from '@mastra/pg';
import { postgresCpuMs } from './postgres-cpu';
import { ratioAtLeast, ratioAtMost } from './ratios';
import type { RatioRow } from './ratios';

/** A list of positive integers from the environment (`100,300`), else `fallback`. */
function envNumbers(name: string, fallback: number[]): number[] {
  const text = process.env[name];
  if (!text) return fallback;
  const numbers = text.split(',').map(Number);
  if (!numbers.every((n) => Number.isInteger(n) && n > 0))
    throw new Error(`${name} must be positive integers separated by commas, not '${text}'`);
  return numbers;
}

const [FIRST_MIN_MS, FIRST_MAX_MS = FIRST_MIN_MS] = envNumbers('BENCH_REALISTIC_FIRST_MS', [200, 500]);
/**
 * The realistic model: deltas per answer, ms to the first token (uniform in [min, max];
 * `BENCH_REALISTIC_FIRST_MS=300` fixes it, `=200,500` is the default range), ms between tokens.
 */
export const REALISTIC = { deltas: 50, firstMinMs: FIRST_MIN_MS, firstMaxMs: FIRST_MAX_MS, gapMs: 20 };
/** The concurrencies measured (`BENCH_REALISTIC_CONCURRENCY=100,300`). */
const CONCURRENCY = envNumbers('BENCH_REALISTIC_CONCURRENCY', [100, 500]);
const WINDOW_MS = 6000;
/**
 * Where every window's samples are written as JSON, with the bench process's longest event-loop
 * delay and garbage collection in it, when set (`BENCH_REALISTIC_SAMPLES=/tmp/samples.json`).
 */
const SAMPLES_FILE = process.env.BENCH_REALISTIC_SAMPLES;
const ROUNDS = 2;
/** A run that has not ended this long after its request counts as failed (its connection is dropped). */
const RUN_TIMEOUT_MS = 60_000;
/** Issue 21: the service's p99 time to first content at most the plain server's, its throughput at least 1.5×. */
const TARGET_P99_RATIO = 1.0;
const TARGET_THROUGHPUT_RATIO = 1.5;

// ---------------------------------------------------------------------------------------------------
// The plain @ag-ui/mastra server

/**
 * What a team gets by following the AG-UI docs with Mastra: a node:http route that runs the
 * request's RunAgentInput through `MastraAgent` (a fresh one per request, as `getLocalAgents` does)
 * and writes each event with `EventEncoder`. No database, auth or limits.
 */
export async function startPlainAgUi(agent: Agent): Promise<LocalServer> {
  return startRunServer((input, req, res) => {
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { 'content-type': encoder.getContentType(), 'cache-control': 'no-cache' });
    const run = new MastraAgent({
      agentId: 'assistant',
      agent,
      resourceId: input.forwardedProps?.resourceId,
    });
    run.run(input).subscribe({
      next: (event) => res.write(encoder.encode(event)),
      error: (err: unknown) => res.end(encoder.encode({ type: 'RUN_ERROR', message: String(err) } as never)),
      complete: () => res.end(),
    });
  });
}

/** A run request as the bench's peers read it: the owner in `forwardedProps.resourceId`. */
export type PeerInput = RunAgentInput & { forwardedProps?: { resourceId?: string } };

export type LocalServer = { url: string; close: () => Promise<void> };

/**
 * A node:http server on a free local port whose every request is a run: its JSON body, read whole,
 * handed to `serve` with the request and the response (the peers' servers, realistic-bench.ts and
 * durable-floor.ts).
 */
export async function startRunServer(
  serve: (input: PeerInput, req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<LocalServer> {
  const server = http.createServer((req, res) => {
    // The bench client's warm-up of its connection (realistic-bench.ts, `warmed`).
    if (req.method === 'GET') return void res.writeHead(204).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => serve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as PeerInput, req, res));
  });
  // Fastify's default, which the service runs with: node:http's 5 s would close a client's idle
  // keep-alive connection between two rounds of the baseline guard (bench/README.md, "Baseline guard").
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/run`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The name the persisting peer goes by in the tables. */
export const PERSISTING_PEER = 'persisting @ag-ui/mastra (Memory on @mastra/pg)';

/**
 * The peer that does the same work as the service: the plain server around a copy of the same agent
 * given a Mastra `Memory` on `@mastra/pg` at `databaseUrl` (its `mastra_*` tables), so that it
 * stores every run's thread and messages as the service does (`MastraAgent` names the request's
 * thread and `forwardedProps.resourceId` to the memory). Mastra's default memory options.
 */
export async function startPersistingAgUi(
  agent: Agent,
  databaseUrl: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const storage = new PostgresStore({ id: 'bench-persisting-peer', connectionString: databaseUrl });
  await storage.init();
  const persisting = agent.__fork();
  persisting.__setMemory(new Memory({ storage }));
  const server = await startPlainAgUi(persisting);
  return {
    url: server.url,
    close: async () => {
      await server.close();
      await storage.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The client (a child process): N warm connections in a closed loop

/** One run: sent and done are ms from the window's start, firstContent ms from sent; `client`: its connection's index. */
type RunSample = {
  client: number;
  sent: number;
  firstContent: number;
  done: number;
  ok: boolean;
  why?: string;
};

const CONTENT = ['"type":"TEXT_MESSAGE_CONTENT"', '"type":"TEXT_MESSAGE_CHUNK"'];
const FINISHED = '"type":"RUN_FINISHED"';
const BODY_END = '\r\n0\r\n\r\n';
/** Enough of the previous chunk to find a marker that spans two chunks. */
const OVERLAP = 40;

/** A small seeded generator (mulberry32): every subject sees the same first-token delays per connection. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function openSocket(url: URL): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
    socket.setEncoding('latin1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

type Exchange = { firstContent: number; done: number; ok: boolean; why?: string };

/**
 * One run over a keep-alive socket: the times of its first content and its end. A refusal (a status
 * other than 200, as a 503 under load) or a stream without RUN_FINISHED is a failed run: the socket
 * is then destroyed (its response may be unread) and the caller opens another.
 */
function exchange(socket: Socket, request: Buffer): Promise<Exchange> {
  return new Promise((resolve) => {
    let tail = '';
    let head = '';
    let firstContent = NaN;
    let finished = false;
    const timer = setTimeout(() => end(false, 'timeout'), RUN_TIMEOUT_MS);
    const end = (ok: boolean, why?: string) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      if (!ok) socket.destroy();
      resolve({ firstContent, done: performance.now(), ok, why });
    };
    const onClose = () => end(false, head ? 'closed mid-response' : 'closed before a response');
    const onData = (chunk: string) => {
      if (head.length < 12) {
        head += chunk.slice(0, 12);
        if (head.length >= 12 && !head.startsWith('HTTP/1.1 200'))
          return end(false, `HTTP ${head.slice(9, 12)}`);
      }
      const text = tail + chunk;
      if (Number.isNaN(firstContent) && CONTENT.some((m) => text.includes(m)))
        firstContent = performance.now();
      finished ||= text.includes(FINISHED);
      tail = text.slice(-OVERLAP);
      if (text.endsWith(BODY_END)) end(finished, finished ? undefined : 'no RUN_FINISHED');
    };
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.write(request);
  });
}

function requestBytes(url: URL, text: string, owner: string): Buffer {
  const threadId = `bench-${randomUUID()}`;
  const body = JSON.stringify({
    threadId,
    runId: randomUUID(),
    messages: [{ id: randomUUID(), role: 'user', content: text }],
    tools: [],
    context: [],
    forwardedProps: { memory: { thread: threadId }, resourceId: owner },
  });
  return Buffer.from(
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      `accept: text/event-stream\r\nconnection: keep-alive\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * A connection made warm: it carries `GET /health/live` and its whole answer (the service's probe; the
 * peers answer any GET with 204). A connection the kernel completed may still wait in the server's
 * accept queue, and a busy Node server takes about one from it per turn of its event loop: without
 * this, the window's first runs on the connections opened last waited seconds to be accepted, in
 * every subject alike (bench/HISTORY.md, "The N=300 tails were the bench's").
 */
function warmed(url: URL, socket: Socket): Promise<Socket> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: string) => {
      text += chunk;
      const head = text.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = /^content-length: *(\d+)/im.exec(text.slice(0, head));
      const chunked = /^transfer-encoding: *chunked/im.test(text.slice(0, head));
      const body = text.slice(head + 4);
      if (chunked ? !body.endsWith('0\r\n\r\n') : body.length < Number(length?.[1] ?? 0)) return;
      socket.off('data', onData);
      if (!text.startsWith('HTTP/1.1 2')) reject(new Error(`warming a connection: ${text.slice(0, 12)}`));
      else resolve(socket);
    };
    socket.on('data', onData);
    socket.write(`GET /health/live HTTP/1.1\r\nhost: ${url.host}\r\nconnection: keep-alive\r\n\r\n`);
  });
}

/** A new connection to `url`, warm. */
const openWarm = (url: URL) => openSocket(url).then((socket) => warmed(url, socket));

/** Child process: opens `n` warm connections, says ready, runs the closed loop on 'go', sends the samples. */
async function closedLoopClient(runUrl: string, n: number, windowMs: number, seed: number): Promise<void> {
  const url = new URL(runUrl);
  const sockets = await Promise.all(Array.from({ length: n }, () => openWarm(url)));
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send?.({ type: 'ready' });
  });
  const { deltas, firstMinMs, firstMaxMs, gapMs } = REALISTIC;
  const t0 = performance.now();
  const samples: RunSample[] = [];
  try {
    await Promise.all(
      sockets.map(async (_, i) => {
        const random = seeded(seed * 100_003 + i);
        while (performance.now() - t0 < windowMs) {
          const first = firstMinMs + Math.floor(random() * (firstMaxMs - firstMinMs + 1));
          const request = requestBytes(url, `/bench ${deltas} ${first} ${gapMs}`, `bench-user-${i}`);
          const sent = performance.now();
          const { firstContent, done, ok, why } = await exchange(sockets[i], request);
          samples.push({
            client: i,
            sent: sent - t0,
            firstContent: firstContent - sent,
            done: done - t0,
            ok,
            why,
          });
          if (!ok) sockets[i] = await openWarm(url);
        }
      }),
    );
    process.send?.({ type: 'samples', samples });
  } catch (err) {
    process.send?.({ type: 'failed', error: String(err) });
  } finally {
    for (const socket of sockets) socket.destroy();
    process.disconnect();
  }
}

type ChildMessage =
  { type: 'ready' } | { type: 'samples'; samples: RunSample[] } | { type: 'failed'; error: string };

/**
 * One window of the closed loop against the subject, the client in a child process; the server's
 * CPU and the local Postgres server's measured over it.
 */
async function window(
  subject: RealisticSubject,
  n: number,
  seed: number,
): Promise<{ samples: RunSample[]; cpuMs: number; dbCpuMs: number; stalls: Stalls }> {
  const { url } = subject;
  const cpuMs = subject.cpuMs ?? ownCpuMs;
  const child = fork(__filename, ['--closed-loop', url, String(n), String(WINDOW_MS), String(seed)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () =>
    new Promise<ChildMessage>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the closed-loop client did not answer within 120 s')),
        120_000,
      );
      child.once('message', (m) => {
        clearTimeout(timer);
        resolve(m as ChildMessage);
      });
    });
  try {
    const ready = await next();
    if (ready.type !== 'ready') throw new Error(`closed-loop client: ${JSON.stringify(ready)}`);
    const cpu = cpuMs();
    const dbCpu = postgresCpuMs();
    const watching = watchStalls();
    child.send('go');
    const result = await next();
    const stalls = watching.stop();
    const used = cpuMs() - cpu;
    const dbUsed = (postgresCpuMs() ?? NaN) - (dbCpu ?? NaN);
    if (result.type !== 'samples') throw new Error(`closed-loop client: ${JSON.stringify(result)}`);
    return { samples: result.samples, cpuMs: used, dbCpuMs: dbUsed, stalls };
  } catch (err) {
    child.kill();
    throw err;
  }
}

/** This process's longest event-loop delay and longest garbage collection over a window (ms). */
type Stalls = { loopMaxMs: number; gcMaxMs: number };

/** Watches this process's event loop and garbage collector until `stop`. */
function watchStalls(): { stop: () => Stalls } {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  let gcMaxMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMaxMs = Math.max(gcMaxMs, entry.duration);
  });
  loop.enable();
  gc.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      loop.disable();
      gc.disconnect();
      return { loopMaxMs: loop.max / 1e6, gcMaxMs };
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// The measurement

/** `cpuMs`: the CPU time (ms) the server has used so far, when it is not this process (a built replica). */
export type RealisticSubject = { name: string; url: string; cpuMs?: () => number };

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
export type RealisticFigures = {
  name: string;
  n: number;
  firstContentP50: number;
  firstContentP99: number;
  /** Completed runs per second: the window's runs over the time until the last ended (mean of the rounds). */
  throughput: number;
  /** CPU ms of the server process (this one unless the subject says) per run, over all rounds. */
  cpuMsPerRun: number;
  /** CPU ms of the local Postgres server per run, over all rounds (NaN when it cannot be read). */
  dbCpuMsPerRun: number;
  runs: number;
  /** Runs refused (a status other than 200) or ended without RUN_FINISHED. */
  failed: number;
  /** Why they failed. */
  why: string;
};

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
};
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * ROUNDS rounds after a warm-up; in each, every subject takes one window at each concurrency, one
 * subject after the other, starting one subject later each round (a subject's leftovers, its ends
 * and log writes, fall on every other subject equally often).
 */
export async function benchRealistic(
  subjects: RealisticSubject[],
  progress: (what: string) => void,
): Promise<RealisticFigures[]> {
  const take = async (subject: RealisticSubject, n: number, seed: number) => {
    await sleep(500);
    if (globalThis.gc) globalThis.gc();
    return window(subject, n, seed);
  };
  progress(`realistic: warm-up, one window of ${CONCURRENCY[0]} per subject`);
  for (const subject of subjects) await take(subject, CONCURRENCY[0], 0);
  const collected: Collected = new Map();
  const windows: Array<{ subject: string; n: number; round: number; stalls: Stalls; samples: RunSample[] }> =
    [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const n of CONCURRENCY) {
      for (let k = 0; k < subjects.length; k++) {
        const subject = subjects[(k + round) % subjects.length];
        progress(`realistic: round ${round}/${ROUNDS}, ${n} concurrent, ${subject.name}`);
        const { samples, cpuMs, dbCpuMs, stalls } = await take(subject, n, round);
        windows.push({ subject: subject.name, n, round, stalls, samples });
        const key = `${subject.name}@${n}`;
        const into = collected.get(key) ?? { samples: [], rates: [], cpuMs: 0, dbCpuMs: 0 };
        into.samples.push(...samples);
        // Every run sent within the window, over the time until the last of them ended.
        const makespan = Math.max(...samples.map((s) => s.done)) / 1000;
        into.rates.push(samples.filter((s) => s.ok).length / makespan);
        into.cpuMs += cpuMs;
        into.dbCpuMs += dbCpuMs;
        collected.set(key, into);
      }
    }
    progress(`realistic: after round ${round}\n${formatRealistic(figuresOf(subjects, collected))}`);
  }
  if (SAMPLES_FILE) writeFileSync(SAMPLES_FILE, JSON.stringify(windows));
  return figuresOf(subjects, collected);
}

type Collected = Map<string, { samples: RunSample[]; rates: number[]; cpuMs: number; dbCpuMs: number }>;

function figuresOf(subjects: RealisticSubject[], collected: Collected): RealisticFigures[] {
  return CONCURRENCY.flatMap((n) =>
    subjects.flatMap((subject) => {
      const got = collected.get(`${subject.name}@${n}`);
      if (!got) return [];
      const { samples, rates, cpuMs, dbCpuMs } = got;
      // A failed run counts as never showing content: it ranks last.
      const first = samples.map((s) => (s.ok ? s.firstContent : Infinity));
      return [
        {
          name: subject.name,
          n,
          firstContentP50: percentile(first, 50),
          firstContentP99: percentile(first, 99),
          throughput: rates.reduce((a, b) => a + b, 0) / rates.length,
          cpuMsPerRun: cpuMs / samples.length,
          dbCpuMsPerRun: dbCpuMs / samples.length,
          runs: samples.length,
          failed: samples.filter((s) => !s.ok).length,
          why: [...new Set(samples.flatMap((s) => (s.why ? [s.why] : [])))].join(', '),
        },
      ];
    }),
  );
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function formatRealistic(figures: RealisticFigures[]): string {
  const { deltas, firstMinMs, firstMaxMs, gapMs } = REALISTIC;
  const ideal = (n: number) => n / ((firstMinMs + firstMaxMs) / 2 + (deltas - 1) * gapMs) / 0.001;
  const lines = [
    `7. Realistic model (${firstMinMs}-${firstMaxMs} ms to the first token, ${gapMs} ms between ${deltas} deltas): ` +
      `N clients in a closed loop for ${WINDOW_MS / 1000} s, ${ROUNDS} rounds after a warm-up`,
    `${'subject'.padEnd(44)}${'N'.padStart(5)}${'first content p50'.padStart(19)}${'p99'.padStart(9)}` +
      `${'runs/s'.padStart(9)}${'CPU ms/run'.padStart(12)}${'DB CPU ms/run'.padStart(15)}${'runs'.padStart(8)}${'failed'.padStart(8)}`,
  ];
  for (const f of figures) {
    lines.push(
      `${f.name.padEnd(44)}${String(f.n).padStart(5)}${fmt(f.firstContentP50, 1).padStart(19)}${fmt(f.firstContentP99, 1).padStart(9)}` +
        `${fmt(f.throughput, 1).padStart(9)}${fmt(f.cpuMsPerRun, 2).padStart(12)}${(Number.isNaN(f.dbCpuMsPerRun) ? '-' : fmt(f.dbCpuMsPerRun, 2)).padStart(15)}${String(f.runs).padStart(8)}${String(f.failed).padStart(8)}${f.why ? `  (${f.why})` : ''}`,
    );
  }
  lines.push(
    `CPU ms/run: the server process's; DB CPU ms/run: the local Postgres server's ('-' where /proc does not show it).`,
    `runs/s: the runs sent within the window (N in flight at every moment) that ended with RUN_FINISHED, over the ` +
      `time until the last of them ended; a server that kept up would reach about ${CONCURRENCY.map((n) => `${fmt(ideal(n))} (N=${n})`).join(', ')}.`,
  );
  return lines.join('\n');
}

/** Issue 21's rows: `service` (as shipped) against `plain` at each concurrency. */
export function realisticRatios(figures: RealisticFigures[], service: string, plain: string): RatioRow[] {
  return CONCURRENCY.flatMap((n) => {
    const s = figures.find((f) => f.name === service && f.n === n);
    const p = figures.find((f) => f.name === plain && f.n === n);
    if (!s || !p) return [];
    return [
      ratioAtMost(
        `first content p99, ${n} concurrent, realistic model`,
        s.firstContentP99,
        p.firstContentP99,
        TARGET_P99_RATIO,
        `${fmt(s.firstContentP99, 1)} / ${fmt(p.firstContentP99, 1)} ms (p50 ${fmt(s.firstContentP50, 1)} / ${fmt(p.firstContentP50, 1)} ms)`,
      ),
      ratioAtLeast(
        `throughput, ${n} concurrent, realistic model (runs/s)`,
        s.throughput,
        p.throughput,
        TARGET_THROUGHPUT_RATIO,
        `${fmt(s.throughput, 1)} / ${fmt(p.throughput, 1)} runs/s (CPU ms/run ${fmt(s.cpuMsPerRun, 2)} / ${fmt(p.cpuMsPerRun, 2)})`,
      ),
    ];
  });
}

/** Issue 37: the service's p99 time to first content at most 0.8× the persisting peer's. */
const TARGET_P99_PERSISTING = 0.8;

/** Issue 37's rows: `service` against the persisting peer at each concurrency. */
export function persistingRatios(figures: RealisticFigures[], service: string): RatioRow[] {
  return CONCURRENCY.flatMap((n) => {
    const s = figures.find((f) => f.name === service && f.n === n);
    const p = figures.find((f) => f.name === PERSISTING_PEER && f.n === n);
    if (!s || !p) return [];
    return [
      ratioAtMost(
        `first content p99, ${n} concurrent, realistic model, against the persisting peer`,
        s.firstContentP99,
        p.firstContentP99,
        TARGET_P99_PERSISTING,
        `${fmt(s.firstContentP99, 1)} / ${fmt(p.firstContentP99, 1)} ms (p50 ${fmt(s.firstContentP50, 1)} / ${fmt(p.firstContentP50, 1)} ms; ${fmt(s.throughput, 1)} / ${fmt(p.throughput, 1)} runs/s)`,
      ),
    ];
  });
}

// ---------------------------------------------------------------------------------------------------
// What any server can reach: the ceilings the throughput target meets

/** The engine alone with the realistic model: Mastra's `agent.stream()` in this process, no HTTP, no server. */
export type EngineAloneFigures = { n: number; throughput: number; cpuMsPerRun: number };

/**
 * The same closed loop of N, in-process: N loops each running one `agent.stream()` after another
 * with the realistic model for one window (after a warm-up window). Its CPU per run is the cost of
 * Mastra's agent loop itself, which every subject pays: one event loop cannot complete more runs per
 * second than 1,000 / that.
 */
export async function benchEngineAlone(
  agent: Agent,
  progress: (what: string) => void,
): Promise<EngineAloneFigures[]> {
  const { deltas, firstMinMs, firstMaxMs, gapMs } = REALISTIC;
  const run = async (random: () => number) => {
    const first = firstMinMs + Math.floor(random() * (firstMaxMs - firstMinMs + 1));
    const output = await agent.stream([{ role: 'user', content: `/bench ${deltas} ${first} ${gapMs}` }], {
      maxSteps: 10,
    });
    const reader = (output.fullStream as ReadableStream<unknown>).getReader();
    while (!(await reader.read()).done);
  };
  const loop = async (n: number, seed: number) => {
    const t0 = performance.now();
    const cpu = process.cpuUsage();
    let runs = 0;
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const random = seeded(seed * 100_003 + i);
        while (performance.now() - t0 < WINDOW_MS) {
          await run(random);
          runs++;
        }
      }),
    );
    const used = process.cpuUsage(cpu);
    return { runs, seconds: (performance.now() - t0) / 1000, cpuMs: (used.user + used.system) / 1000 };
  };
  const figures: EngineAloneFigures[] = [];
  for (const n of CONCURRENCY) {
    progress(`realistic: the engine alone, in-process, ${n} concurrent (warm-up, then one window)`);
    await loop(n, 0);
    if (globalThis.gc) globalThis.gc();
    const { runs, seconds, cpuMs } = await loop(n, 1);
    figures.push({ n, throughput: runs / seconds, cpuMsPerRun: cpuMs / runs });
  }
  return figures;
}

/**
 * Whether the throughput target can be met at all at each N: the target (1.5× the plain server's
 * runs/s) against two ceilings no server passes. The closed loop's: N clients, each waiting for its
 * run to end, complete at most N / (the shortest run: the model's least time to the first token and
 * its deltas) per second. One event loop's: at most 1,000 / (the engine alone's CPU ms per run).
 */
export function formatCeilings(
  figures: RealisticFigures[],
  engine: EngineAloneFigures[],
  plain: string,
): string {
  const { deltas, firstMinMs, gapMs } = REALISTIC;
  const shortestRunMs = firstMinMs + (deltas - 1) * gapMs;
  const lines = [
    `Ceilings of the throughput target (1.5× the plain server): the engine alone (Mastra's agent.stream() in-process, no HTTP)`,
    `${'N'.padStart(5)}${'engine runs/s'.padStart(15)}${'engine CPU ms/run'.padStart(19)}${'target runs/s'.padStart(15)}` +
      `${'closed-loop ceiling'.padStart(21)}${'one-loop CPU ceiling'.padStart(22)}  reachable`,
  ];
  for (const e of engine) {
    const p = figures.find((f) => f.name === plain && f.n === e.n);
    if (!p) continue;
    const target = p.throughput * TARGET_THROUGHPUT_RATIO;
    const closedLoop = e.n / (shortestRunMs / 1000);
    const cpu = 1000 / e.cpuMsPerRun;
    lines.push(
      `${String(e.n).padStart(5)}${fmt(e.throughput, 1).padStart(15)}${fmt(e.cpuMsPerRun, 2).padStart(19)}${fmt(target, 1).padStart(15)}` +
        `${fmt(closedLoop, 1).padStart(21)}${fmt(cpu, 1).padStart(22)}  ${target <= Math.min(closedLoop, cpu) ? 'yes' : 'no'}`,
    );
  }
  return lines.join('\n');
}

if (process.argv[2] === '--closed-loop') {
  const [url, n, windowMs, seed] = process.argv.slice(3);
  closedLoopClient(url, Number(n), Number(windowMs), Number(seed)).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
