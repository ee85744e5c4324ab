/**
 * Spike, not part of `npm run bench`: what the issue 14 ratios would be with Mastra off the request
 * thread (bench/README.md, "What a server in front of the engine can reach"). A bare Fastify route
 * (no Nest, database or lifecycle, like bare-engine.ts) hands each run to one worker thread, which
 * runs the service's agent and posts its text back, the first delta at once and later deltas merged
 * per turn. With HOLD=1 the worker holds a run's continuation after its first delta while any other
 * run is starting. Measured against the engine alone in the main thread, as the bench measures it:
 * throughput of `/bench 5000` (12 rounds after 5, order alternating, a forced GC before each run)
 * and first-delta p50/p99 of 100 runs at once from the bench's warm-connection client (5 rounds
 * after 1, alternating with the engine's rounds).
 *
 *   npm run build && node --expose-gc dist/bench/worker-engine-spike.js
 */
import 'reflect-metadata';
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import fastify from 'fastify';
import { AgentsService } from '../src/agents/agents.service';
import { loadConfig } from '../src/config/config';
import { bareStream, streamText } from './bare-engine';
import type { BareInput } from './bare-engine';
import { engineFirstDeltaRound, engineRun } from './engine-bench';
import type { EngineAgent } from './engine-bench';

type ToWorker = { id: number; prompt: string };
type FromWorker = { id: number; text?: string; end?: boolean };

const agentOf = (): EngineAgent =>
  new AgentsService(loadConfig({ ...process.env, MODEL: 'scripted' })).get('assistant').agent;

/** The worker: one `agent.stream()` per message, its text posted back. */
function workerMain(): void {
  const port = parentPort!;
  const agent = agentOf();
  const hold = process.env.HOLD === '1';
  let starting = 0;
  let waiting: Array<() => void> = [];
  const started = () => {
    if (--starting > 0) return;
    const resolve = waiting;
    waiting = [];
    for (const r of resolve) r();
  };
  const othersStarted = () =>
    hold && starting > 0 ? new Promise<void>((resolve) => waiting.push(resolve)) : undefined;
  const run = async ({ id, prompt }: ToWorker): Promise<void> => {
    starting++;
    const shown = await streamText(
      agent,
      prompt,
      (text) => port.postMessage({ id, text } satisfies FromWorker),
      async () => {
        started();
        await othersStarted();
      },
    );
    if (!shown) started();
    port.postMessage({ id, end: true } satisfies FromWorker);
  };
  port.on('message', (message: ToWorker) => void run(message));
}

const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
};
const collect = () => {
  globalThis.gc?.();
  globalThis.gc?.();
};
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  if (!globalThis.gc) throw new Error('run with node --expose-gc');
  const agent = agentOf();
  const worker = new Worker(__filename);
  const runs = new Map<number, { text: (t: string) => void; end: () => void }>();
  let seq = 0;
  worker.on('message', ({ id, text, end }: FromWorker) => {
    const run = runs.get(id)!;
    if (text) run.text(text);
    if (end) {
      runs.delete(id);
      run.end();
    }
  });
  const server = fastify();
  server.post('/run', (req, reply) => {
    const input = req.body as BareInput;
    const id = ++seq;
    runs.set(id, bareStream(reply, input));
    worker.postMessage({ id, prompt: input.messages[0].content } satisfies ToWorker);
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}/run`;

  const fetchRun = async (): Promise<number> => {
    const body = JSON.stringify({
      threadId: randomUUID(),
      runId: randomUUID(),
      messages: [{ content: '/bench 5000' }],
    });
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const reader = res.body!.getReader();
    while (!(await reader.read()).done);
    return performance.now() - t0;
  };
  const viaWorker: number[] = [];
  const alone: number[] = [];
  for (let round = 0; round < 17; round++) {
    for (let k = 0; k < 2; k++) {
      collect();
      const ms = (round + k) % 2 ? (await engineRun(agent, '/bench 5000')).ms : await fetchRun();
      if (round >= 5) ((round + k) % 2 ? alone : viaWorker).push(ms);
    }
  }
  const throughput = percentile(alone, 50) / percentile(viaWorker, 50);
  console.log(
    `throughput, /bench 5000: server with a worker ${percentile(viaWorker, 50).toFixed(1)} ms, ` +
      `engine alone ${percentile(alone, 50).toFixed(1)} ms: ${throughput.toFixed(2)}×`,
  );

  const client = fork(`${__dirname}/run-bench.js`, ['--client', 'latency-warm', url], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () =>
    new Promise<{ type: string; samples?: Array<{ firstDelta: number }> }>((r) => client.once('message', r));
  await next();
  const served: number[] = [];
  const engine: number[] = [];
  for (let round = 0; round <= 5; round++) {
    collect();
    client.send('round');
    const { samples = [] } = await next();
    if (round > 0) served.push(...samples.map((s) => s.firstDelta));
    await sleep(100);
    collect();
    const firsts = await engineFirstDeltaRound(agent, '/bench 20', 100);
    if (round > 0) engine.push(...firsts);
    await sleep(100);
  }
  console.log(
    `first delta, 100 runs at once${process.env.HOLD === '1' ? ' (HOLD=1)' : ''}: server with a worker ` +
      `p50 ${percentile(served, 50).toFixed(0)} p99 ${percentile(served, 99).toFixed(0)} ms, engine alone ` +
      `p50 ${percentile(engine, 50).toFixed(0)} p99 ${percentile(engine, 99).toFixed(0)} ms: ` +
      `${(percentile(served, 99) / percentile(engine, 99)).toFixed(2)}×`,
  );
  client.send('close');
  await server.close();
  await worker.terminate();
}

Logger.overrideLogger(['warn', 'error']);
if (isMainThread) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  workerMain();
}
