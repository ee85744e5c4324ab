import { randomUUID } from 'node:crypto';
import { Event, LiveRun, readRun } from './sse';

export type { Event, LiveRun };

/** Where the client sends its requests: the route prefix, and headers for every request. */
export type Target = { base: string; headers?: Record<string, string> };

/** An id no other run of any kit run has used. */
export const kitId = (prefix: string) => `conformance-${prefix}-${randomUUID()}`;

export type Client = ReturnType<typeof clientFor>;

/**
 * HTTP calls to io-bridge for its own tests, reading streams strictly as docs/protocol.md#the-stream frames them
 * (test/support/sse.ts). The conformance kit (packages/conformance) reads them as the SSE specification does.
 */
export function clientFor(target: Target) {
  const base = target.base.replace(/\/+$/, '');
  const headers = target.headers ?? {};

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

  /** A request whose answer is JSON (or empty); the body is read. */
  const json = async (path: string, init: Parameters<typeof request>[1] = {}) => {
    const res = await request(path, init);
    const text = await res.text();
    return { res, status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  /** POST /run, read as it streams. A refused run (not 200) resolves with its response and no frames. */
  const openRun = async (body: unknown): Promise<LiveRun> =>
    readRun(await request('/run', { body, headers: { accept: 'text/event-stream' } }), 15_000);

  /** POST /run read to its end. */
  const run = async (body: unknown) => {
    const live = await openRun(body);
    const frames = await live.done;
    return {
      res: live.res,
      raw: live.raw(),
      bytes: live.bytes(),
      frames,
      events: frames.map((f) => f.event),
    };
  };

  const postToolResult = (runId: string, toolCallId: string, body: unknown) =>
    json(`/runs/${encodeURIComponent(runId)}/tool-calls/${encodeURIComponent(toolCallId)}/result`, { body });

  return { base, headers, request, json, openRun, run, postToolResult };
}

/** Asserts a run was accepted (200), showing the refusal otherwise. */
export function expectAccepted(run: { res: Response; raw: string | (() => string) }): void {
  const raw = typeof run.raw === 'function' ? run.raw() : run.raw;
  expect({ status: run.res.status, refusal: run.res.status === 200 ? undefined : raw }).toEqual({
    status: 200,
  });
}

/** A `RunAgentInput` with one user message and fresh ids; `extra` overrides any field. */
export function runBody(text: string, agentId: string | undefined, extra: Record<string, unknown> = {}) {
  return {
    threadId: kitId('thread'),
    runId: kitId('run'),
    messages: [{ id: kitId('msg'), role: 'user', content: text }],
    tools: [],
    context: [],
    forwardedProps: (agentId ? { agentId } : {}) as Record<string, unknown>,
    ...extra,
  };
}

/** The error envelope of docs/protocol.md#routes: `{statusCode, code, message, details?}` as JSON, nothing else. */
export async function expectErrorEnvelope(res: Response, status: number, code?: string) {
  const text = await res.text();
  expect({ status: res.status, body: text }).toMatchObject({ status });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expect(body).toEqual({
    statusCode: status,
    code: code ?? expect.stringMatching(/^[A-Z][A-Z_]+$/),
    message: expect.stringMatching(/\S/),
    ...('details' in body ? { details: expect.anything() } : {}),
  });
  return body as { statusCode: number; code: string; message: string; details?: unknown };
}
