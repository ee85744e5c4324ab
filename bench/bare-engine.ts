/**
 * The bare engine server: the least an HTTP server can do around Mastra. A Fastify route with no
 * Nest, validation, auth, logging, database or lifecycle calls `agent.stream()` for the request's
 * message and writes its text as SSE frames the way the service batches it (the first delta at once,
 * later deltas merged per event-loop turn). It is not a conforming AG-UI server (no message
 * lifecycle, no tool calls, no errors): it stands for what merely being an HTTP server on the
 * engine's event loop costs, so that the issue 14 ratios can be read against what is reachable on
 * this machine (bench/HISTORY.md, "What a server in front of the engine can reach").
 */
import type { AddressInfo } from 'node:net';
import fastify from 'fastify';
import type { FastifyReply } from 'fastify';
import { SSE_HEADERS } from '../src/runs/stream/sse-writer';
import type { EngineAgent } from './engine-bench';

type Chunk = { type: string; payload?: { text?: unknown } };

/**
 * The agent's answer to `prompt`, its text handed to `write` the way the service batches it: the
 * first delta at once (then `afterFirst`, awaited), later deltas merged per event-loop turn.
 * Resolves with whether any text came.
 */
export async function streamText(
  agent: EngineAgent,
  prompt: string,
  write: (text: string) => void,
  afterFirst?: () => Promise<void>,
): Promise<boolean> {
  const output = await agent.stream([{ role: 'user', content: prompt }], { maxSteps: 10 });
  const reader = (output.fullStream as ReadableStream<Chunk>).getReader();
  let text = '';
  let shown = false;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (!text) return;
    write(text);
    text = '';
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.type !== 'text-delta' || typeof value.payload?.text !== 'string') continue;
    text += value.payload.text;
    if (!shown) {
      shown = true;
      flush();
      if (afterFirst) await afterFirst();
    } else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  }
  flush();
  return shown;
}

/** A bare route's request body: what it reads of a RunAgentInput. */
export type BareInput = { threadId: string; runId: string; messages: Array<{ content: string }> };

/**
 * Opens a bare route's SSE response: `RUN_STARTED` at once, then one `TEXT_MESSAGE_CONTENT` frame
 * per `text(delta)`, and `RUN_FINISHED` on `end()`. No message lifecycle: the lean client and the
 * bench's reader need only these three events.
 */
export function bareStream(
  reply: FastifyReply,
  input: BareInput,
): { text: (delta: string) => void; end: () => void } {
  const base = { threadId: input.threadId, runId: input.runId };
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, SSE_HEADERS);
  let id = 0;
  const frame = (event: object) => `id: ${++id}\ndata: ${JSON.stringify(event)}\n\n`;
  raw.write(frame({ type: 'RUN_STARTED', timestamp: Date.now(), ...base }));
  return {
    text: (delta) =>
      raw.write(frame({ type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId: 'm', delta })),
    end: () => raw.end(frame({ type: 'RUN_FINISHED', timestamp: Date.now(), ...base })),
  };
}

export async function startBareEngine(
  agent: EngineAgent,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = fastify({ bodyLimit: 1 << 20 });
  server.post('/run', async (req, reply) => {
    const input = req.body as BareInput;
    const stream = bareStream(reply, input);
    await streamText(agent, input.messages[0].content, stream.text);
    stream.end();
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const { port } = server.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/run`, close: () => server.close() };
}
