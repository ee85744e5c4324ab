/**
 * io-bridge benchmark (see bench/README.md). One process, so the ratios between the measurements hold
 * on a noisy machine: throughput of the whole service over HTTP against the engine alone and against
 * a bare Fastify server, start-up latency under 100 concurrent runs, and memory per open run.
 *
 * Run with `npm run bench`. With `--client` it is a load generator in a child process, started by the
 * benchmark itself for the measurements that must not share the server's event loop.
 */
import 'reflect-metadata';
import { benchThreads, formatThreadsBench } from './threads-bench';
import { benchStockRoundTrip, formatStockRoundTrip } from './stock-roundtrip';
import { benchToolRoundTrip, formatToolRoundTrip } from './tool-roundtrip';
import { WarmConnections } from './lean-client';
import { fetchRun, JSON_HEADERS, runBody, SseReader } from './sse-client';
import type { StreamSample } from './sse-client';
import { benchResume, formatResume, withReplica } from './resume-bench';
import { benchParked, formatParked, parkedTargets } from './parked-bench';
import { benchDurable, durableTargets, formatDurable } from './durable-bench';
import { startBareEngine } from './bare-engine';
import { DURABLE_FLOOR, startDurableFloor } from './durable-floor';
import { benchBaselineGuard, formatBaselineGuard, guardFailure } from './baseline-guard';
import type { GuardResult, WarmClient } from './baseline-guard';
import { BaselineError } from './baseline-build';
import { benchDbCost, dbCostRatio, formatDbCost } from './db-cost';
import {
  benchEngineAlone,
  benchRealistic,
  formatCeilings,
  formatRealistic,
  PERSISTING_PEER,
  persistingRatios,
  realisticRatios,
  startPersistingAgUi,
  startPlainAgUi,
} from './realistic-bench';
import { engineFirstDeltaRound, engineMemory, engineRun } from './engine-bench';
import type { EngineAgent, EngineMemory } from './engine-bench';
import { differenceAtMost, formatRatios, ratioAtLeast, ratioAtMost } from './ratios';
import type { RatioRow } from './ratios';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import fastify from 'fastify';
import { DataSource } from 'typeorm';
import { assistant } from '../src/mastra/agents/assistant';
import { AgentsService } from '../src/agents/agents.service';
import { createApp, logLevels } from '../src/app.factory';
import { loadConfig } from '../src/config/config';
import { resolveDatabase } from '../src/database/resolve-database';
import { SSE_HEADERS } from '../src/runs/stream/sse-writer';
import { ConversationStore } from '../src/runs/storage/conversation.store';
import { RunEventsRepository } from '../src/runs/storage/run-events.repository';
import { toStored } from '../src/threads/message-format';
import type { AppConfig } from '../src/config/config';

const DELTAS = 5000;
const WARMUP = 5;
/** A multiple of the four throughput subjects (and of the three of pass 1b): each runs in each position of a round equally often. */
const MEASURED = 12;
const CONCURRENT_RUNS = 100;
const CONCURRENT_DELTAS = 20;
const CONCURRENT_ROUNDS = 5;
const OPEN_RUNS = 1000;
/** Ten deltas five seconds apart: the run stays open for the whole memory measurement. */
const SLOW_PROMPT = '/slow 5000 a b c d e f g h';
/** Issue 14: the whole service over HTTP streams a 5,000-delta run at least as fast as the engine alone. */
const TARGET_SERVICE_VS_ENGINE = 1.0;
/** Issue 37: the service streams a long answer at least twice as fast as the plain `@ag-ui/mastra` server. */
const TARGET_SERVICE_VS_PLAIN = 2;
const TARGET_STARTED_P99_MS = 100;
/** Issue 14: first-delta p99 of 100 runs started at once, service / engine alone, at most this. */
const TARGET_FIRST_DELTA_RATIO = 1.1;
/** Issue 14: the service holds at most this many KB (1,024 bytes) of heap per open run above Mastra's own. */
const TARGET_MEMORY_DIFF_KB = 25;

// ---------------------------------------------------------------------------------------------------
// Client side: runs timed from the send (the request body and the SSE reader are in sse-client.ts)

type LatencySample = { started: number; firstDelta: number };

/** One run on its own connection (no agent, so no pool limit), timing its first events from the send. */
function timedRun(url: URL, text: string, owner?: string, agentId?: string): Promise<LatencySample> {
  const body = runBody(text, undefined, owner, agentId);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let started = NaN;
    let firstDelta = NaN;
    const sse = new SseReader((type) => {
      if (type === 'RUN_STARTED' && Number.isNaN(started)) started = performance.now() - t0;
      if (type === 'TEXT_MESSAGE_CONTENT' && Number.isNaN(firstDelta)) firstDelta = performance.now() - t0;
    });
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`POST ${url.href}: HTTP ${res.statusCode}`));
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => sse.feed(chunk));
        res.on('error', reject);
        res.on('end', () =>
          sse.lastType === 'RUN_FINISHED'
            ? resolve({ started, firstDelta })
            : reject(new Error(`run ended with ${sse.lastType ?? 'nothing'}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------------
// The three throughput subjects

/** The same AG-UI events as the service streams, precomputed as SSE frames. */
function ceilingFrames(deltas: number): string[] {
  const threadId = randomUUID();
  const runId = randomUUID();
  const messageId = randomUUID();
  const timestamp = Date.now();
  const events: object[] = [
    { type: 'RUN_STARTED', timestamp, threadId, runId },
    { type: 'TEXT_MESSAGE_START', timestamp, messageId, role: 'assistant' },
    ...Array.from({ length: deltas }, () => ({
      type: 'TEXT_MESSAGE_CONTENT',
      timestamp,
      messageId,
      delta: 'x ',
    })),
    { type: 'TEXT_MESSAGE_END', timestamp, messageId },
    { type: 'RUN_FINISHED', timestamp, threadId, runId },
  ];
  return events.map((event, i) => `id: ${i + 1}\ndata: ${JSON.stringify(event)}\n\n`);
}

/** The ceiling: a bare Fastify server writing precomputed frames as a naive writer would, one write per event. */
async function startCeiling(): Promise<{ url: string; close: () => Promise<void> }> {
  const frames = ceilingFrames(DELTAS);
  const server = fastify();
  server.post('/run', (_req, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, SSE_HEADERS);
    for (const frame of frames) reply.raw.write(frame);
    reply.raw.end();
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const { port } = server.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/run`, close: () => server.close() };
}

/**
 * The floor for start latency on this machine: a bare Fastify route that does the run's one claim
 * statement (the same ConversationStore call as the service, on the same pool) and then writes
 * RUN_STARTED, with no Nest, validation, auth, logging or engine. What the service adds to it is
 * its own per-request cost; what it shows by itself is the cost of a durable claim before the stream.
 */
async function startAdmissionFloor(
  store: ConversationStore,
  config: AppConfig,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = fastify();
  server.post('/run', async (req, reply) => {
    const input = req.body as {
      threadId: string;
      runId: string;
      messages: Array<Record<string, unknown>>;
      forwardedProps?: { resourceId?: string };
    };
    const resourceId = input.forwardedProps?.resourceId ?? 'anonymous';
    await store.claim({
      threadId: input.threadId,
      runId: input.runId,
      resourceId,
      agentId: 'assistant',
      leaseMs: config.runLeaseMs,
      title: 'bench',
      incoming: input.messages.map((m) => toStored(m)),
      lastMessages: config.lastMessages,
      readOnly: false,
      memory: true,
      input: { request: input, principal: { resourceId, admin: false } },
    });
    reply.hijack();
    reply.raw.writeHead(200, SSE_HEADERS);
    const frame = (id: number, event: object) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
    const base = { threadId: input.threadId, runId: input.runId };
    reply.raw.write(frame(1, { type: 'RUN_STARTED', timestamp: Date.now(), ...base }));
    setImmediate(() => {
      reply.raw.end(
        frame(2, { type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId: 'm', delta: 'x ' }) +
          frame(3, { type: 'RUN_FINISHED', timestamp: Date.now(), ...base }),
      );
      void store.endRun({ ...base, attempt: 1, resourceId, end: { status: 'finished' }, produced: [] });
    });
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const { port } = server.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/run`, close: () => server.close() };
}

// ---------------------------------------------------------------------------------------------------
// An agent of the agents file against the same agent in code

/** The agent id of the built-in assistant's twin in the agents file. */
const CONFIG_TWIN = 'assistant-from-config';

/** An agents file defining the built-in assistant again (same instructions, tools and model) as CONFIG_TWIN. */
async function configAgentFile(): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), 'bench-agents-')), 'agents.json');
  const agents = {
    [CONFIG_TWIN]: {
      name: 'Assistant (from AGENTS_CONFIG)',
      instructions: await assistant.getInstructions(),
      tools: Object.keys(await assistant.listTools()),
    },
  };
  writeFileSync(path, JSON.stringify({ agents }));
  return path;
}

type ConfigAgentFigures = { code: Latency; config: Latency };

/**
 * Issue 36: first content of an agent of the agents file against the same agent in code, CONCURRENT_RUNS at
 * once, the two taking turns round by round (which goes first alternating), all rounds' samples together.
 */
async function compareConfigAgent(runUrl: string): Promise<ConfigAgentFigures> {
  const code: LatencySample[] = [];
  const config: LatencySample[] = [];
  for (let turn = 0; turn < 3; turn++) {
    const order =
      turn % 2 === 0 ? (['assistant', CONFIG_TWIN] as const) : ([CONFIG_TWIN, 'assistant'] as const);
    for (const agentId of order) {
      (agentId === 'assistant' ? code : config).push(...(await latencyRounds(runUrl, agentId)));
    }
  }
  return { code: latencyOf(code), config: latencyOf(config) };
}

function formatConfigAgent({ code, config }: ConfigAgentFigures): string {
  const row = (name: string, l: Latency) =>
    `| ${name} | ${l.firstDeltaP50.toFixed(1)} | ${l.firstDeltaP99.toFixed(1)} | ${l.n} |`;
  return [
    `Agent from AGENTS_CONFIG against the same agent in code (${CONCURRENT_RUNS} concurrent runs, first content ms)`,
    '| agent | p50 | p99 | runs |',
    '|---|---|---|---|',
    row('assistant (code)', code),
    row(`${CONFIG_TWIN} (AGENTS_CONFIG)`, config),
    `p99 config/code: ${(config.firstDeltaP99 / code.firstDeltaP99).toFixed(3)} (target at most 1.05), p50: ${(config.firstDeltaP50 / code.firstDeltaP50).toFixed(3)}`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Statistics and output

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
/** Nearest-rank percentile. */
const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
};
const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
const mb = (bytes: number) => bytes / 1024 / 1024;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function collect(): void {
  if (!globalThis.gc) return;
  globalThis.gc();
  globalThis.gc();
}

// ---------------------------------------------------------------------------------------------------
// Measurements

type Subject = { name: string; run: () => Promise<StreamSample> };
type Throughput = {
  name: string;
  /** Median deltas per wall-clock second. */
  rate: number;
  /** Median deltas per CPU-second of this process: steadier than wall time when other processes compete. */
  cpuRate: number;
  ms: number;
  events: number;
  rates: number[];
};

/**
 * Runs the subjects round-robin (warm-up, then measured rounds), so a slow patch of the machine hits
 * all of them. Each round starts one subject later than the one before, so every subject runs in
 * every position equally often (MEASURED is a multiple of the number of subjects): a run leaves work
 * behind it (its database statements, its garbage), and a fixed order made the subject after the
 * service pay for it (the bare engine server, fourth, measured up to 1.11× the engine, second).
 */
async function throughput(subjects: Subject[]): Promise<Throughput[]> {
  const samples = subjects.map(() => [] as Array<StreamSample & { cpuMs: number }>);
  for (let round = 0; round < WARMUP + MEASURED; round++) {
    for (let k = 0; k < subjects.length; k++) {
      const i = (k + round) % subjects.length;
      const subject = subjects[i];
      collect();
      const cpu = process.cpuUsage();
      const sample = { ...(await subject.run()), cpuMs: 0 };
      const used = process.cpuUsage(cpu);
      sample.cpuMs = (used.user + used.system) / 1000;
      if (sample.deltas !== DELTAS)
        throw new Error(`${subject.name}: ${sample.deltas} deltas, expected ${DELTAS}`);
      if (round >= WARMUP) samples[i].push(sample);
    }
  }
  return subjects.map((subject, i) => {
    const rates = samples[i].map((s) => (s.deltas / s.ms) * 1000);
    return {
      name: subject.name,
      rate: median(rates),
      cpuRate: median(samples[i].map((s) => (s.deltas / s.cpuMs) * 1000)),
      ms: median(samples[i].map((s) => s.ms)),
      events: median(samples[i].map((s) => s.events)),
      rates,
    };
  });
}

type Latency = {
  startedP50: number;
  startedP99: number;
  firstDeltaP50: number;
  firstDeltaP99: number;
  n: number;
};

/** Rounds of CONCURRENT_RUNS runs started at once, after one warm-up round; all measured samples together. */
async function latencyRounds(runUrl: string, agentId?: string): Promise<LatencySample[]> {
  const url = new URL(runUrl);
  const all: LatencySample[] = [];
  for (let round = 0; round <= CONCURRENT_ROUNDS; round++) {
    collect();
    const samples = await Promise.all(
      Array.from({ length: CONCURRENT_RUNS }, (_, i) =>
        timedRun(url, `/bench ${CONCURRENT_DELTAS}`, `bench-user-${i}`, agentId),
      ),
    );
    if (round > 0) all.push(...samples);
    await sleep(100);
  }
  return all;
}

function latencyOf(samples: LatencySample[]): Latency {
  const started = samples.map((s) => s.started);
  const firstDelta = samples.map((s) => s.firstDelta);
  return {
    startedP50: percentile(started, 50),
    startedP99: percentile(started, 99),
    firstDeltaP50: percentile(firstDelta, 50),
    firstDeltaP99: percentile(firstDelta, 99),
    n: samples.length,
  };
}

type ClientMessage =
  | { type: 'latency'; samples: LatencySample[] }
  | { type: 'ready' }
  | { type: 'round'; samples: LatencySample[] }
  | { type: 'started'; ms: number }
  | { type: 'failed'; error: string }
  | { type: 'done'; aborted: number; other: string[] };

/** A load generator in a child process (this same script), talking over IPC. */
function spawnClient(args: string[]) {
  const child = fork(__filename, ['--client', ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const next = () =>
    new Promise<ClientMessage>((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        reject(new Error(`the client process ${why}`));
      };
      const onMessage = (m: unknown) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(m as ClientMessage);
      };
      const onExit = (code: number | null) => fail(`exited with ${code} before answering`);
      const timer = setTimeout(() => fail('did not answer within 120 s'), 120_000);
      child.once('message', onMessage);
      child.once('exit', onExit);
    });
  const finished = async () => {
    const code = await exited;
    if (code !== 0) throw new Error(`the client process exited with ${code}`);
  };
  return { next, finished, send: (message: string) => child.send(message), kill: () => child.kill() };
}

/**
 * The rounds of `latencyRounds` from the lean client in a child process (warm connections), one
 * round at a time on the parent's word: `between(round)` runs after each round, so another subject
 * (the engine alone) can take its turn between the service's rounds, as in `throughput`.
 */
async function warmLatencyFromChild(
  runUrl: string,
  between: (round: number) => Promise<void> = () => Promise.resolve(),
): Promise<LatencySample[]> {
  const client = spawnClient(['latency-warm', runUrl]);
  const all: LatencySample[] = [];
  try {
    const ready = await client.next();
    if (ready.type !== 'ready') throw new Error(`latency client: ${JSON.stringify(ready)}`);
    for (let round = 0; round <= CONCURRENT_ROUNDS; round++) {
      client.send('round');
      const message = await client.next();
      if (message.type !== 'round') throw new Error(`latency client: ${JSON.stringify(message)}`);
      if (round > 0) all.push(...message.samples);
      await sleep(100);
      await between(round);
    }
    client.send('close');
    await client.finished();
  } catch (err) {
    client.kill();
    throw err;
  }
  return all;
}

/**
 * The engine's turn between two service rounds: CONCURRENT_RUNS `agent.stream()` calls started at
 * once in this process, ms to each one's first `text-delta`; round 0 is the warm-up, as the service's.
 */
function engineLatencyRound(agent: EngineAgent, into: number[]) {
  return async (round: number): Promise<void> => {
    collect();
    const firsts = await engineFirstDeltaRound(agent, `/bench ${CONCURRENT_DELTAS}`, CONCURRENT_RUNS);
    if (round > 0) into.push(...firsts);
    await sleep(100);
  };
}

/** The warm-connection client above, one round on each call: the baseline guard's latency client (baseline-guard.ts). */
async function warmClient(runUrl: string): Promise<WarmClient> {
  const client = spawnClient(['latency-warm', runUrl]);
  try {
    const ready = await client.next();
    if (ready.type !== 'ready') throw new Error(`latency client: ${JSON.stringify(ready)}`);
  } catch (err) {
    client.kill();
    throw err;
  }
  return {
    round: async () => {
      client.send('round');
      const message = await client.next();
      if (message.type !== 'round') throw new Error(`latency client: ${JSON.stringify(message)}`);
      return message.samples;
    },
    close: async () => {
      client.send('close');
      await client.finished();
    },
    kill: () => client.kill(),
  };
}

/** The same rounds from a client in its own process: what a remote client sees, without sharing the event loop. */
async function latencyFromChild(runUrl: string): Promise<LatencySample[]> {
  const client = spawnClient(['latency', runUrl]);
  const message = await client.next();
  await client.finished();
  if (message.type !== 'latency') throw new Error(`latency client: ${JSON.stringify(message)}`);
  return message.samples;
}

type Memory = {
  rssBefore: number;
  rssOpen: number;
  heapBefore: number;
  heapOpen: number;
  rssAfter: number;
  openMs: number;
  statuses: Record<string, number>;
};

/**
 * OPEN_RUNS long-running runs held open by a child process (so this process's memory is the server's
 * alone), measured once all have RUN_STARTED, then aborted by the client; every run must end cancelled.
 */
async function memory(app: NestFastifyApplication, runUrl: string): Promise<Memory> {
  // One thread per run (a thread has one active run at a time), all under one prefix.
  const threadPrefix = `bench-memory-${randomUUID()}`;
  collect();
  await sleep(200);
  collect();
  const before = process.memoryUsage();
  const client = spawnClient(['memory', runUrl, String(OPEN_RUNS), threadPrefix]);
  let openMs: number;
  let open: NodeJS.MemoryUsage;
  try {
    const started = await client.next();
    if (started.type !== 'started') throw new Error(`memory client: ${JSON.stringify(started)}`);
    openMs = started.ms;
    collect();
    open = process.memoryUsage();
    client.send('abort');
    const done = await client.next();
    if (done.type !== 'done' || done.aborted !== OPEN_RUNS) {
      throw new Error(`memory client: not every run was aborted: ${JSON.stringify(done)}`);
    }
    await client.finished();
  } catch (err) {
    client.kill(); // its open runs would otherwise hold the server open
    throw err;
  }

  // Every run must be recorded as cancelled and every connection closed on the server side.
  const db = app.get(DataSource);
  const server = app.getHttpServer();
  const connections = () => new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
  let statuses: Record<string, number>;
  for (const deadline = Date.now() + 30_000; ;) {
    const rows: Array<{ status: string; n: number }> = await db.query(
      'SELECT status, count(*)::int AS n FROM runs WHERE thread_id LIKE $1 GROUP BY status',
      [`${threadPrefix}-%`],
    );
    statuses = Object.fromEntries(rows.map((r) => [r.status, r.n]));
    if (statuses.cancelled === OPEN_RUNS && (await connections()) === 0) break;
    if (Date.now() > deadline) {
      throw new Error(
        `runs not all cancelled after abort: ${JSON.stringify(statuses)}, ${await connections()} open`,
      );
    }
    await sleep(100);
  }
  collect();
  const after = process.memoryUsage();
  return {
    rssBefore: before.rss,
    rssOpen: open.rss,
    heapBefore: before.heapUsed,
    heapOpen: open.heapUsed,
    rssAfter: after.rss,
    openMs,
    statuses,
  };
}

/** Child process, latency: the same rounds as in-process, samples sent back. */
async function latencyClient(runUrl: string): Promise<void> {
  const samples = await latencyRounds(runUrl);
  process.send?.({ type: 'latency', samples } satisfies ClientMessage);
  process.disconnect();
}

/**
 * Child process, warm latency: the lean client (connections opened before, bodies built before),
 * one round of `latencyRounds` per 'round' message from the parent, until 'close'.
 */
async function warmLatencyClient(runUrl: string): Promise<void> {
  const connections = await WarmConnections.open(runUrl, CONCURRENT_RUNS);
  const send = (m: ClientMessage) => process.send?.(m);
  const onMessage = (m: unknown) => {
    if (m === 'close') {
      process.off('message', onMessage);
      connections.close();
      process.disconnect();
      return;
    }
    const bodies = Array.from({ length: CONCURRENT_RUNS }, (_, i) =>
      runBody(`/bench ${CONCURRENT_DELTAS}`, undefined, `bench-user-${i}`),
    );
    collect();
    connections.round(bodies).then(
      (samples) => send({ type: 'round', samples }),
      (err: unknown) => send({ type: 'failed', error: String(err) }),
    );
  };
  process.on('message', onMessage);
  send({ type: 'ready' });
}

/** Child process, memory: opens the runs, reports, aborts them when told. */
async function memoryClient(runUrl: string, count: number, threadPrefix: string): Promise<void> {
  const send = (m: ClientMessage) => process.send?.(m);
  const abort = new AbortController();
  process.once('message', () => abort.abort());
  const t0 = performance.now();
  let started = 0;
  const open = async (): Promise<void> => {
    const res = await fetch(runUrl, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: runBody(SLOW_PROMPT, `${threadPrefix}-${randomUUID()}`),
      signal: abort.signal,
    });
    if (!res.ok || !res.body) {
      const error = `HTTP ${res.status} ${await res.text()}`;
      // Before the abort every run must be open: say so at once rather than let the parent time out.
      send({ type: 'failed', error });
      throw new Error(error);
    }
    // TEXT_MESSAGE_START comes from the model's stream: the run's engine is running, not queued.
    const sse = new SseReader((type) => {
      if (type === 'TEXT_MESSAGE_START' && ++started === count)
        send({ type: 'started', ms: performance.now() - t0 });
    });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended before the abort (${sse.lastType})`);
      sse.feed(decoder.decode(value, { stream: true }));
    }
  };
  const results = await Promise.allSettled(Array.from({ length: count }, open));
  const isAbort = (r: PromiseSettledResult<void>) =>
    r.status === 'rejected' && (r.reason as Error | undefined)?.name === 'AbortError';
  send({
    type: 'done',
    aborted: results.filter(isAbort).length,
    other: [
      ...new Set(
        results
          .filter((r) => !isAbort(r))
          .map((r) => (r.status === 'rejected' ? String(r.reason) : 'completed')),
      ),
    ],
  });
  process.disconnect();
}

/** A subject's line in the throughput tables. */
const throughputRow = (t: Throughput) =>
  `${t.name.padEnd(38)}${fmt(t.rate).padStart(12)}${fmt(t.ms, 1).padStart(10)}${fmt(t.events).padStart(12)}${fmt(t.cpuRate).padStart(14)}`;

function printThroughput([service, engine, bare, bareEngine]: Throughput[]): void {
  console.log('');
  console.log(`1-3. one run of ${DELTAS} deltas: median of ${MEASURED} after ${WARMUP} warm-up, interleaved`);
  console.log(
    `${'subject'.padEnd(38)}${'deltas/s'.padStart(12)}${'ms/run'.padStart(10)}${'events/run'.padStart(12)}${'deltas/CPU-s'.padStart(14)}`,
  );
  for (const t of [service, engine, bare, bareEngine]) {
    console.log(throughputRow(t));
  }
  const vsEngine = service.rate / engine.rate;
  /** Per-round ratios: the subjects of a round ran back to back, so their spread shows the noise. */
  const spread = (other: Throughput) => {
    const r = service.rates.map((rate, i) => rate / other.rates[i]);
    return `rounds ${pct(Math.min(...r))} to ${pct(Math.max(...r))}, median ${pct(median(r))}`;
  };
  /** Best against best: under contention from other processes the fastest round is the least disturbed. */
  const best = (other: Throughput) => pct(Math.max(...service.rates) / Math.max(...other.rates));
  console.log(
    `service/engine  ${vsEngine.toFixed(2)}× = ${pct(vsEngine)}  (best ${best(engine)}; ${spread(engine)}; target >= ${TARGET_SERVICE_VS_ENGINE.toFixed(1)}×: ${vsEngine >= TARGET_SERVICE_VS_ENGINE ? 'met' : 'MISSED'})`,
  );
  console.log(`service/ceiling ${pct(service.rate / bare.rate)}  (best ${best(bare)}; ${spread(bare)})`);
  console.log(
    `by CPU time: service/engine ${pct(service.cpuRate / engine.cpuRate)}, service/ceiling ${pct(service.cpuRate / bare.cpuRate)}`,
  );
  console.log(
    `bare engine server/engine ${(bareEngine.rate / engine.rate).toFixed(2)}× (by CPU time ${(bareEngine.cpuRate / engine.cpuRate).toFixed(2)}×): ` +
      `what an HTTP server in front of the engine reaches here`,
  );
}

function printAgainstPlain([service, plain, bareEngine]: Throughput[]): void {
  console.log('');
  console.log(
    `1b. the same run against the plain @ag-ui/mastra server: median of ${MEASURED} after ${WARMUP} warm-up, interleaved`,
  );
  for (const t of [service, plain, bareEngine]) {
    console.log(throughputRow(t));
  }
  const ratio = service.rate / plain.rate;
  const rounds = service.rates.map((rate, i) => rate / plain.rates[i]);
  console.log(
    `service/plain peer ${ratio.toFixed(2)}× (rounds ${Math.min(...rounds).toFixed(2)}× to ${Math.max(...rounds).toFixed(2)}×; ` +
      `by CPU time ${(service.cpuRate / plain.cpuRate).toFixed(2)}×; target >= ${TARGET_SERVICE_VS_PLAIN}×: ${ratio >= TARGET_SERVICE_VS_PLAIN ? 'met' : 'MISSED'})`,
  );
  console.log(
    `bare engine server/plain peer ${(bareEngine.rate / plain.rate).toFixed(2)}× (by CPU time ${(bareEngine.cpuRate / plain.cpuRate).toFixed(2)}×): ` +
      `what an HTTP server in front of the engine reaches against the peer here`,
  );
}

type Latencies = {
  warm: Latency;
  fresh: Latency;
  inProcess: Latency;
  floor: Latency;
  /** The engine alone: CONCURRENT_RUNS `agent.stream()` calls at once in-process, ms to the first `text-delta`. */
  engine: { firstDeltaP50: number; firstDeltaP99: number };
  /** The bare engine server (bare-engine.ts), warm connections, and the engine rounds that alternated with its rounds. */
  bare: Latency;
  bareEngine: { firstDeltaP50: number; firstDeltaP99: number };
};

function printLatency({ warm, fresh, inProcess, floor, engine, bare, bareEngine }: Latencies): void {
  console.log('');
  console.log(
    `4. ${CONCURRENT_RUNS} concurrent runs of ${CONCURRENT_DELTAS} deltas, ${CONCURRENT_ROUNDS} rounds (${warm.n} runs) after 1 warm-up: ms from send`,
  );
  console.log(
    `${'client'.padEnd(40)}${'RUN_STARTED p50'.padStart(17)}${'p99'.padStart(9)}${'first delta p50'.padStart(17)}${'p99'.padStart(9)}`,
  );
  for (const [name, l] of [
    ['child, warm connections (lean client)', warm],
    ['child, new connection each (node:http)', fresh],
    ['in-process, new connection each', inProcess],
    ['floor: bare Fastify + the claim (warm)', floor],
    ['bare engine server (warm)', bare],
  ] as const) {
    console.log(
      `${name.padEnd(40)}${fmt(l.startedP50, 1).padStart(17)}${fmt(l.startedP99, 1).padStart(9)}${fmt(l.firstDeltaP50, 1).padStart(17)}${fmt(l.firstDeltaP99, 1).padStart(9)}`,
    );
  }
  console.log(
    `${'engine alone: agent.stream() in-process'.padEnd(40)}${'–'.padStart(17)}${'–'.padStart(9)}${fmt(engine.firstDeltaP50, 1).padStart(17)}${fmt(engine.firstDeltaP99, 1).padStart(9)}`,
  );
  console.log(
    `first delta p99, service (warm) / engine alone: ${(warm.firstDeltaP99 / engine.firstDeltaP99).toFixed(2)}× (target <= ${TARGET_FIRST_DELTA_RATIO.toFixed(1)}×; the engine's rounds alternate with the service's)`,
  );
  console.log(
    `first delta p99, bare engine server (warm) / engine alone: ${(bare.firstDeltaP99 / bareEngine.firstDeltaP99).toFixed(2)}× ` +
      `(${fmt(bare.firstDeltaP99, 1)} / ${fmt(bareEngine.firstDeltaP99, 1)} ms: what an HTTP server in front of the engine reaches here)`,
  );
  console.log(
    `RUN_STARTED p99 target < ${TARGET_STARTED_P99_MS} ms (child, warm connections): ${warm.startedP99 < TARGET_STARTED_P99_MS ? 'met' : 'MISSED'}`,
  );
}

/** KB (1,024 bytes) per open run between two readings. */
const kbPerRun = (from: number, to: number, runs: number) => (to - from) / runs / 1024;

function printMemory(mem: Memory, engine: EngineMemory | undefined): void {
  const perThousand = (from: number, to: number) => fmt(mb(((to - from) / OPEN_RUNS) * 1000), 1);
  const kb = (from: number, to: number, runs = OPEN_RUNS) => fmt(kbPerRun(from, to, runs), 1);
  console.log('');
  console.log(`5. ${OPEN_RUNS} open runs ('${SLOW_PROMPT}', client in a child process)`);
  console.log(`every engine running (TEXT_MESSAGE_START received) after ${fmt(mem.openMs)} ms`);
  console.log(
    `server rss             ${fmt(mb(mem.rssBefore), 1)} -> ${fmt(mb(mem.rssOpen), 1)} MB: ${perThousand(mem.rssBefore, mem.rssOpen)} MB per 1000 open runs, ${kb(mem.rssBefore, mem.rssOpen)} KB per run`,
  );
  console.log(
    `server heap used       ${fmt(mb(mem.heapBefore), 1)} -> ${fmt(mb(mem.heapOpen), 1)} MB: ${perThousand(mem.heapBefore, mem.heapOpen)} MB per 1000 open runs, ${kb(mem.heapBefore, mem.heapOpen)} KB per run`,
  );
  console.log(
    `after the client abort ${JSON.stringify(mem.statuses)}, 0 connections, rss ${fmt(mb(mem.rssAfter), 1)} MB`,
  );
  if (!engine) return;
  const n = engine.streams;
  console.log(
    `engine alone: ${n} open agent.stream() calls in a fresh child process, every 'text-start' after ${fmt(engine.openMs)} ms`,
  );
  console.log(
    `engine rss             ${fmt(mb(engine.rssBefore), 1)} -> ${fmt(mb(engine.rssOpen), 1)} MB: ${kb(engine.rssBefore, engine.rssOpen, n)} KB per stream; service - engine ${fmt(kbPerRun(mem.rssBefore, mem.rssOpen, OPEN_RUNS) - kbPerRun(engine.rssBefore, engine.rssOpen, n), 1)} KB`,
  );
  console.log(
    `engine heap used       ${fmt(mb(engine.heapBefore), 1)} -> ${fmt(mb(engine.heapOpen), 1)} MB: ${kb(engine.heapBefore, engine.heapOpen, n)} KB per stream; service - engine ${fmt(kbPerRun(mem.heapBefore, mem.heapOpen, OPEN_RUNS) - kbPerRun(engine.heapBefore, engine.heapOpen, n), 1)} KB`,
  );
}

/** The rows of the issue 14 summary, for the parts that ran; another module adds its own rows the same way. */
function issue14Ratios(
  subjects: Throughput[] | undefined,
  latency: Latencies | undefined,
  mem: Memory | undefined,
  engineMem: EngineMemory | undefined,
): RatioRow[] {
  const rows: RatioRow[] = [];
  if (subjects) {
    const [service, engine, , bare] = subjects;
    rows.push(
      ratioAtLeast(
        `throughput, one /bench ${DELTAS} run (median deltas/s)`,
        service.rate,
        engine.rate,
        TARGET_SERVICE_VS_ENGINE,
        `${fmt(service.rate)} / ${fmt(engine.rate)} deltas/s (by CPU time ${(service.cpuRate / engine.cpuRate).toFixed(2)}×, ` +
          `median of the per-round ratios ${median(service.rates.map((r, i) => r / engine.rates[i])).toFixed(2)}×; ` +
          `bare engine server ${(bare.rate / engine.rate).toFixed(2)}×)`,
      ),
    );
  }
  if (latency) {
    rows.push(
      ratioAtMost(
        `first delta p99, ${CONCURRENT_RUNS} runs at once`,
        latency.warm.firstDeltaP99,
        latency.engine.firstDeltaP99,
        TARGET_FIRST_DELTA_RATIO,
        `${fmt(latency.warm.firstDeltaP99, 1)} / ${fmt(latency.engine.firstDeltaP99, 1)} ms (p50 ${fmt(latency.warm.firstDeltaP50, 1)} / ${fmt(latency.engine.firstDeltaP50, 1)} ms; ` +
          `bare engine server ${(latency.bare.firstDeltaP99 / latency.bareEngine.firstDeltaP99).toFixed(2)}×)`,
      ),
    );
  }
  if (mem && engineMem) {
    const service = kbPerRun(mem.heapBefore, mem.heapOpen, OPEN_RUNS);
    const engine = kbPerRun(engineMem.heapBefore, engineMem.heapOpen, engineMem.streams);
    const serviceRss = kbPerRun(mem.rssBefore, mem.rssOpen, OPEN_RUNS);
    const engineRss = kbPerRun(engineMem.rssBefore, engineMem.rssOpen, engineMem.streams);
    rows.push(
      differenceAtMost(
        `memory per open run, heap (${OPEN_RUNS} open)`,
        service,
        engine,
        TARGET_MEMORY_DIFF_KB,
        'KB',
        `${fmt(service, 1)} / ${fmt(engine, 1)} KB (rss ${fmt(serviceRss, 1)} / ${fmt(engineRss, 1)} KB, difference ${fmt(serviceRss - engineRss, 1)} KB)`,
      ),
    );
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const env = {
    ...process.env,
    MODEL: 'scripted',
    OPENAI_BASE_URL: undefined,
    LOG_LEVEL: 'warn',
    PORT: '0',
    EMBEDDED_PG_PORT: '54331',
    EMBEDDED_PG_DIR: '.data/bench-postgres',
    RATE_LIMIT_PER_MINUTE: '1000000',
    // Every bench client shares one address (and a few owners): the fair shares are not what is measured.
    MAX_ACTIVE_RUNS_PER_OWNER: '1000000',
    MAX_READERS_PER_OWNER: '1000000',
    // The built-in assistant again, defined in the agents file: the config-agent part compares the two.
    AGENTS_CONFIG: await configAgentFile(),
  };
  const initial = loadConfig(env);
  Logger.overrideLogger(logLevels(initial.logLevel));
  if (!globalThis.gc) console.warn('gc is not exposed: run node with --expose-gc for steadier figures');
  const { config, stop } = await resolveDatabase(initial);
  const app = await createApp(config);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const runUrl = `http://127.0.0.1:${port}${config.prefix}/run`;
  const ceiling = await startCeiling();
  const { agent } = app.get(AgentsService).get('assistant');
  const bareEngine = await startBareEngine(agent);

  const progress = (what: string) => process.stderr.write(`... ${what}\n`);
  const only = new Set(
    (
      process.env.BENCH_ONLY ??
      'throughput,latency,realistic,db-cost,memory,threads,tools,stock-tools,resume,parked,durable,config-agent,baseline'
    ).split(','),
  );
  try {
    progress('warming up');
    for (let i = 0; i < 20; i++) await fetchRun(runUrl, `/bench ${CONCURRENT_DELTAS}`);
    // Memory first, on a warm but otherwise fresh process: later measurements leave the heap grown,
    // which would hide part of the growth from rss.
    let mem: Memory | undefined;
    let engineMem: EngineMemory | undefined;
    if (only.has('memory')) {
      progress(`memory: ${OPEN_RUNS} open runs`);
      mem = await memory(app, runUrl);
      progress(`memory: ${OPEN_RUNS} open agent.stream() calls, engine alone in a fresh child process`);
      engineMem = await engineMemory(env, SLOW_PROMPT, OPEN_RUNS);
    }
    let subjects: Throughput[] | undefined;
    let againstPlain: Throughput[] | undefined;
    if (only.has('throughput')) {
      const service = {
        name: 'service (HTTP, whole stack)',
        run: () => fetchRun(runUrl, `/bench ${DELTAS}`),
      };
      const bareEngineServer = {
        name: 'bare engine server (Fastify+Mastra)',
        run: () => fetchRun(bareEngine.url, `/bench ${DELTAS}`),
      };
      progress(`throughput: ${WARMUP} + ${MEASURED} rounds of service, engine, ceiling, bare engine server`);
      subjects = await throughput([
        service,
        { name: 'engine (Mastra stream, in-process)', run: () => engineRun(agent, `/bench ${DELTAS}`) },
        { name: 'ceiling (bare Fastify, write/event)', run: () => fetchRun(ceiling.url, '') },
        bareEngineServer,
      ]);
      // The plain peer in a pass of its own, taking turns with the service (issue 37's 2× target) and
      // with the bare engine server: what any server in front of the engine reaches against the peer.
      progress(
        `throughput: ${WARMUP} + ${MEASURED} rounds of service, plain @ag-ui/mastra, bare engine server`,
      );
      const plain = await startPlainAgUi(agent);
      try {
        againstPlain = await throughput([
          service,
          { name: 'plain @ag-ui/mastra (node:http)', run: () => fetchRun(plain.url, `/bench ${DELTAS}`) },
          bareEngineServer,
        ]);
      } finally {
        await plain.close();
      }
    }
    let latency: Latencies | undefined;
    if (only.has('latency')) {
      progress(
        `latency: ${CONCURRENT_RUNS} concurrent runs, client in a child process, warm connections; ` +
          `each round followed by the engine alone (${CONCURRENT_RUNS} agent.stream() at once, in-process)`,
      );
      const engineFirst: number[] = [];
      const warm = latencyOf(await warmLatencyFromChild(runUrl, engineLatencyRound(agent, engineFirst)));
      const engine = {
        firstDeltaP50: percentile(engineFirst, 50),
        firstDeltaP99: percentile(engineFirst, 99),
      };
      progress(
        `latency: ${CONCURRENT_RUNS} concurrent runs, client in a child process, a new connection each`,
      );
      const fresh = latencyOf(await latencyFromChild(runUrl));
      progress(`latency: ${CONCURRENT_RUNS} concurrent runs, client in-process`);
      const inProcess = latencyOf(await latencyRounds(runUrl));
      progress(
        `latency: the bare engine server (Fastify + agent.stream(), nothing else), warm connections; ` +
          `each round followed by the engine alone`,
      );
      const bareFirst: number[] = [];
      const bare = latencyOf(
        await warmLatencyFromChild(bareEngine.url, engineLatencyRound(agent, bareFirst)),
      );
      const bareEngineAlone = {
        firstDeltaP50: percentile(bareFirst, 50),
        firstDeltaP99: percentile(bareFirst, 99),
      };
      progress(`latency: the floor, a bare Fastify route doing the same claim, warm connections`);
      const floorServer = await startAdmissionFloor(app.get(ConversationStore), config);
      try {
        const floor = latencyOf(await warmLatencyFromChild(floorServer.url));
        latency = { warm, fresh, inProcess, floor, engine, bare, bareEngine: bareEngineAlone };
      } finally {
        await floorServer.close();
      }
    }

    let realistic: string | undefined;
    let realisticRows: RatioRow[] = [];
    if (only.has('realistic')) {
      const plain = await startPlainAgUi(agent);
      const persisting = await startPersistingAgUi(agent, config.database.url!);
      const floor = await startDurableFloor(
        agent,
        app.get(ConversationStore),
        app.get(RunEventsRepository),
        config,
      );
      const shipped = 'service';
      const plainName = 'plain @ag-ui/mastra (node:http)';
      try {
        const figures = await benchRealistic(
          [
            { name: shipped, url: runUrl },
            { name: plainName, url: plain.url },
            { name: PERSISTING_PEER, url: persisting.url },
            { name: DURABLE_FLOOR, url: floor.url },
          ],
          progress,
        );
        const engineAlone = await benchEngineAlone(agent, progress);
        realistic = `${formatRealistic(figures)}\n\n${formatCeilings(figures, engineAlone, plainName)}`;
        realisticRows = [
          ...realisticRatios(figures, shipped, plainName),
          ...persistingRatios(figures, shipped),
        ];
      } finally {
        await plain.close();
        await persisting.close();
        await floor.close();
      }
    }

    let dbCost: string | undefined;
    if (only.has('db-cost')) {
      const phases = await benchDbCost(env, progress, agent);
      dbCost = formatDbCost(phases);
      realisticRows = [...realisticRows, ...dbCostRatio(phases)];
    }

    /** `fn` with the base URLs of this instance and of a second one on the same database (another replica). */
    const twoInstances = async <T>(fn: (baseA: string, baseB: string) => Promise<T>): Promise<T> => {
      const second = await createApp(config);
      await second.listen(0, '127.0.0.1');
      try {
        const portB = (second.getHttpServer().address() as AddressInfo).port;
        return await fn(
          `http://127.0.0.1:${port}${config.prefix}`,
          `http://127.0.0.1:${portB}${config.prefix}`,
        );
      } finally {
        await second.close();
      }
    };
    let tools: string | undefined;
    if (only.has('tools')) {
      progress('tools: frontend tool result round trip, one instance and two');
      tools = formatToolRoundTrip(await twoInstances(benchToolRoundTrip));
    }
    let stockTools: string | undefined;
    if (only.has('stock-tools')) {
      progress("stock-tools: a stock AG-UI client's frontend tool round trip against a plain run");
      stockTools = formatStockRoundTrip(
        await benchStockRoundTrip(`http://127.0.0.1:${port}${config.prefix}`),
      );
    }
    let resume: string | undefined;
    if (only.has('resume')) {
      progress('resume: joiners of live runs, on the same instance and on another one');
      const baseA = `http://127.0.0.1:${port}${config.prefix}`;
      resume = formatResume(
        await withReplica(config.database.url!, config.prefix, (baseB) => benchResume(baseA, baseB)),
      );
    }
    let parked: string | undefined;
    let parkedRows: RatioRow[] = [];
    if (only.has('parked')) {
      const figures = await benchParked(config, progress);
      parked = formatParked(figures);
      parkedRows = parkedTargets(figures);
    }
    let durable: string | undefined;
    if (only.has('durable')) {
      const figures = await benchDurable(env, progress);
      durable = formatDurable(figures);
      parkedRows = [...parkedRows, ...durableTargets(figures)];
    }
    let configAgent: string | undefined;
    if (only.has('config-agent')) {
      progress(
        `config-agent: ${CONCURRENT_RUNS} concurrent runs, the built-in assistant and its twin from AGENTS_CONFIG, interleaved`,
      );
      configAgent = formatConfigAgent(await compareConfigAgent(runUrl));
    }
    let threads: string | undefined;
    if (only.has('threads')) {
      progress('threads: list and read latency with 100,000 threads and a 1,000-message thread');
      threads = formatThreadsBench(
        await benchThreads(`http://127.0.0.1:${port}${config.prefix}`, config.database.url!),
      );
    }

    // Last: it compares two other processes, and the in-process parts before it want a fresh heap.
    let guard: GuardResult | undefined;
    let guardError: string | undefined;
    if (only.has('baseline')) {
      try {
        guard = await benchBaselineGuard({ agent, clusterUrl: config.database.url!, warmClient, progress });
      } catch (err) {
        if (!(err instanceof BaselineError)) throw err;
        guardError = `BASELINE GUARD FAILED: ${err.message}`;
      }
    }

    console.log(`io-bridge bench, node ${process.version}`);
    if (subjects) printThroughput(subjects);
    if (againstPlain) printAgainstPlain(againstPlain);
    if (latency) printLatency(latency);
    if (realistic) console.log(`\n${realistic}`);
    if (dbCost) console.log(`\n${dbCost}`);
    if (mem) printMemory(mem, engineMem);
    if (tools) console.log(`\n${tools}`);
    if (stockTools) console.log(`\n${stockTools}`);
    if (resume) console.log(`\n${resume}`);
    if (threads) console.log(threads);
    if (configAgent) console.log(`\n${configAgent}`);
    if (parked) console.log(`\n${parked}`);
    if (durable) console.log(`\n${durable}`);
    const ratios = issue14Ratios(subjects, latency, mem, engineMem);
    if (ratios.length)
      console.log(
        `\n${formatRatios('Issue 14 ratios (service against the engine alone, this run)', ratios)}`,
      );
    if (realisticRows.length) console.log(`\n${formatRatios('Issue 21 ratios (this run)', realisticRows)}`);
    if (parkedRows.length) console.log(`\n${formatRatios('Issue 25 targets (this run)', parkedRows)}`);
    if (guard) console.log(`\n${formatBaselineGuard(guard)}`);
    // Unlike the targets above, the guard's limits decide the exit code (bench/README.md, "Baseline guard").
    const banner = guardError ?? (guard && guardFailure(guard));
    if (banner) {
      console.log(`\n${banner}`);
      console.error(banner);
      process.exitCode = 1;
    }
  } finally {
    await ceiling.close();
    await bareEngine.close();
    await app.close();
    await stop();
  }
  // Everything is closed: the process must now exit by itself. If a handle is left, say which.
  setTimeout(() => {
    console.error('the process did not exit; still active:', process.getActiveResourcesInfo().join(', '));
    process.exit(1);
  }, 10_000).unref();
}

function client([mode, ...args]: string[]): Promise<void> {
  if (mode === 'latency') return latencyClient(args[0]);
  if (mode === 'latency-warm') return warmLatencyClient(args[0]);
  if (mode === 'memory') return memoryClient(args[0], Number(args[1]), args[2]);
  return Promise.reject(new Error(`unknown client mode '${mode}'`));
}

const entry = process.argv[2] === '--client' ? client(process.argv.slice(3)) : main();
entry.catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
