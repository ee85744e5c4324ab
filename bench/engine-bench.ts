/**
 * The engine alone: Mastra's `agent.stream()` with the service's own registered agent (same
 * instructions, same scripted model behind the same `abortableModel` wrapper), its `fullStream`
 * consumed in-process. These are the denominators of the issue 14 ratios (bench/README.md):
 *
 * - `engineRun`: one run of n deltas read to the end (throughput);
 * - `engineFirstDeltaRound`: n runs started at once, ms from the start to each run's first
 *   `text-delta` chunk (start latency), every stream read to its end as the service's are;
 * - `engineMemory`: the bytes Mastra itself holds per open stream, measured in a fresh child process
 *   (this file, forked) so that nothing else of the bench or the service is in its heap.
 */
import 'reflect-metadata';
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { builtInDefinitions } from '../src/agents/built-in-agents';
import { AgentsService } from '../src/agents/agents.service';
import { loadConfig } from '../src/config/config';

export type EngineAgent = ReturnType<AgentsService['get']>['agent'];

type Chunk = { type: string };

/** What `agent.stream()` is given in every engine measurement: one user message, the service's default maxSteps. */
const streamOf = (agent: EngineAgent, prompt: string) =>
  agent.stream([{ role: 'user', content: prompt }], { maxSteps: 10 });

export type EngineSample = { ms: number; deltas: number; events: number };

/** One run: from the `agent.stream()` call until its fullStream is done, counting `text-delta` chunks. */
export async function engineRun(agent: EngineAgent, prompt: string): Promise<EngineSample> {
  const t0 = performance.now();
  const output = await streamOf(agent, prompt);
  const reader = (output.fullStream as ReadableStream<Chunk>).getReader();
  let deltas = 0;
  let events = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    events++;
    if (value.type === 'text-delta') deltas++;
  }
  return { ms: performance.now() - t0, deltas, events };
}

/**
 * `count` runs started at once (one synchronous loop of `agent.stream()` calls, as 100 requests
 * written at once): ms from the round's start to each run's first `text-delta` chunk. Each stream
 * is read to its end, as the service reads its runs.
 */
export async function engineFirstDeltaRound(
  agent: EngineAgent,
  prompt: string,
  count: number,
): Promise<number[]> {
  const t0 = performance.now();
  const one = async (): Promise<number> => {
    const output = await streamOf(agent, prompt);
    const reader = (output.fullStream as ReadableStream<Chunk>).getReader();
    let first = NaN;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.type === 'text-delta' && Number.isNaN(first)) first = performance.now() - t0;
    }
    if (Number.isNaN(first)) throw new Error(`engine run of '${prompt}' streamed no text-delta`);
    return first;
  };
  return Promise.all(Array.from({ length: count }, one));
}

// ---------------------------------------------------------------------------------------------------
// Memory per open stream, in a child process

export type EngineMemory = {
  streams: number;
  rssBefore: number;
  rssOpen: number;
  heapBefore: number;
  heapOpen: number;
  /** ms until every stream had its `text-start` chunk. */
  openMs: number;
};

type MemoryMessage = { type: 'engine-memory'; result: EngineMemory } | { type: 'failed'; error: string };

const collect = () => {
  globalThis.gc?.();
  globalThis.gc?.();
};

/**
 * Mastra's own footprint per open stream: a fresh child process (node --expose-gc, this file) builds
 * the service's agents from the same configuration (no app, no HTTP, no database), warms up, then
 * holds `count` concurrent `agent.stream(prompt)` calls open. It reads `process.memoryUsage()` after
 * a forced GC before and once every stream has its `text-start` chunk (the gate the service's
 * memory figure uses: TEXT_MESSAGE_START comes from that chunk).
 */
export function engineMemory(
  env: Record<string, string | undefined>,
  prompt: string,
  count: number,
): Promise<EngineMemory> {
  const child = fork(__filename, ['--engine-memory', prompt, String(count)], {
    env,
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let answer: MemoryMessage | undefined;
    const timer = setTimeout(() => child.kill(), 120_000);
    child.once('message', (m) => (answer = m as MemoryMessage));
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (answer?.type === 'engine-memory' && code === 0) resolve(answer.result);
      else reject(new Error(`engine memory child (exit ${code}): ${JSON.stringify(answer ?? 'no answer')}`));
    });
  });
}

async function engineMemoryChild(prompt: string, count: number): Promise<void> {
  Logger.overrideLogger(['warn', 'error']);
  const builtIn = await builtInDefinitions();
  const { agent } = new AgentsService(loadConfig(process.env), undefined, null, builtIn).get('assistant');
  // The same warm-up as the service's before its memory reading: 20 short runs.
  for (let i = 0; i < 20; i++) await engineRun(agent, '/bench 20');
  collect();
  await new Promise((resolve) => setTimeout(resolve, 200));
  collect();
  const before = process.memoryUsage();
  const t0 = performance.now();
  const readers: Array<ReadableStreamDefaultReader<Chunk>> = [];
  let started = 0;
  let allStarted: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (allStarted = resolve));
  const open = async (): Promise<void> => {
    const output = await streamOf(agent, prompt);
    const reader = (output.fullStream as ReadableStream<Chunk>).getReader();
    readers.push(reader);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value.type === 'text-start' && ++started === count) allStarted();
    }
  };
  // A stream that fails before its text-start leaves the count short: the parent's timeout reports it.
  for (let i = 0; i < count; i++) void open().catch(() => undefined);
  await opened;
  const openMs = performance.now() - t0;
  collect();
  const atOpen = process.memoryUsage();
  const result: EngineMemory = {
    streams: count,
    rssBefore: before.rss,
    rssOpen: atOpen.rss,
    heapBefore: before.heapUsed,
    heapOpen: atOpen.heapUsed,
    openMs,
  };
  await new Promise<void>((resolve) => process.send!({ type: 'engine-memory', result }, () => resolve()));
  // The slow streams would run on for their remaining deltas; cancelling the readers is enough for
  // Mastra's side, but the scripted model's timers have no signal here. This process is done.
  await Promise.all(readers.map((r) => r.cancel().catch(() => undefined)));
  process.exit(0);
}

if (process.argv[2] === '--engine-memory') {
  engineMemoryChild(process.argv[3], Number(process.argv[4])).catch((err: unknown) => {
    process.send?.({ type: 'failed', error: String(err) } satisfies MemoryMessage);
    console.error(err);
    process.exit(1);
  });
}
