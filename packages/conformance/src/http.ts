import { randomUUID } from 'node:crypto';
import type { ConformanceTarget } from './options';
import { readSse } from './sse';
import type { Event, SseStream } from './sse';

export type { Event };

/** An id no other run of any kit run has used. */
export const kitId = (prefix: string) => `conformance-${prefix}-${randomUUID()}`;

/** A `POST /run` the kit made: what it sent and what it read; the stream rules judge every one of them. */
export type RunStream = SseStream & {
  /** The check that made it. */
  label: string;
  input: { threadId: string; runId: string } & Record<string, unknown>;
};

export type Client = ReturnType<typeof clientFor>;

/**
 * HTTP calls to one backend: every request carries the target's headers; every run it opens is kept in
 * `runs`, so the stream rules can judge each stream the kit read.
 */
export function clientFor(target: ConformanceTarget, streamTimeoutMs = 15_000) {
  const base = target.base.replace(/\/+$/, '');
  const headers = target.headers ?? {};
  const runs: RunStream[] = [];
  let label = 'kit';

  const request = (
    path: string,
    init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    fetch(`${base}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: {
        ...headers,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      ...(init.body === undefined
        ? {}
        : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
    });

  /** A request whose answer is JSON (or empty); the body is read, and kept as text when it is not JSON. */
  const json = async (path: string, init: Parameters<typeof request>[1] = {}) => {
    const res = await request(path, init);
    const text = await res.text();
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { res, status: res.status, body };
  };

  /** POST /run, read as it streams. A refused run (not 200) has its answer in `raw()` and no events. */
  const openRun = async (input: RunStream['input']): Promise<RunStream> => {
    const res = await request('/run', { body: input, headers: { accept: 'text/event-stream' } });
    const stream: RunStream = Object.assign(readSse(res, streamTimeoutMs), { label, input });
    runs.push(stream);
    return stream;
  };

  /** POST /run read to its end. */
  const run = async (input: RunStream['input']): Promise<RunStream> => {
    const stream = await openRun(input);
    await stream.done;
    return stream;
  };

  const resultPath = (runId: string, toolCallId: string) =>
    `/runs/${encodeURIComponent(runId)}/tool-calls/${encodeURIComponent(toolCallId)}/result`;
  const postToolResult = (runId: string, toolCallId: string, body: unknown) =>
    json(resultPath(runId, toolCallId), { body });

  return {
    base,
    headers,
    runs,
    /** Names the check whose runs follow (for the stream rules' report). */
    setLabel: (name: string) => void (label = name),
    request,
    json,
    openRun,
    run,
    resultPath,
    postToolResult,
  };
}

/** A `RunAgentInput` with one user message and fresh ids; `extra` overrides any field. */
export function runBody(text: string, agentId: string | undefined, extra: Record<string, unknown> = {}) {
  return {
    threadId: kitId('thread'),
    runId: kitId('run'),
    messages: [{ id: kitId('msg'), role: 'user', content: text }] as Record<string, unknown>[],
    tools: [] as unknown[],
    context: [] as unknown[],
    forwardedProps: (agentId ? { agentId } : {}) as Record<string, unknown>,
    ...extra,
  };
}
