import { randomUUID } from 'node:crypto';
import { Frame, parseFrames } from '../support/sse';
import { ConformanceTarget } from './options';

export type Event = Record<string, any>;

/** An id no other run of any kit run has used. */
export const kitId = (prefix: string) => `conformance-${prefix}-${randomUUID()}`;

/** A run read as it streams; `bytes` and `raw` are what arrived so far, `frames` the complete events. */
export type LiveRun = {
  res: Response;
  frames: Frame[];
  raw: () => string;
  bytes: () => Uint8Array;
  /** Calls `listener` for every event, those already seen first. */
  onEvent: (listener: (event: Event) => void) => void;
  waitFor: (predicate: (event: Event) => boolean, timeoutMs?: number) => Promise<Event>;
  done: Promise<Frame[]>;
};

export type Client = ReturnType<typeof clientFor>;

/** HTTP calls to one backend: every request carries the target's headers. */
export function clientFor(target: ConformanceTarget) {
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
  const openRun = async (body: unknown): Promise<LiveRun> => {
    const res = await request('/run', { body, headers: { accept: 'text/event-stream' } });
    const chunks: Uint8Array[] = [];
    // A refused run's answer is read at once, so a failing check can show it.
    let text = res.status === 200 ? '' : await res.text();
    const frames: Frame[] = [];
    const listeners = new Set<() => void>();
    const notify = () => listeners.forEach((l) => l());
    const done = (async () => {
      if (res.status !== 200) return frames;
      const decoder = new TextDecoder('utf-8', { fatal: true });
      const reader = res.body!.getReader();
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) break;
        chunks.push(value);
        text += decoder.decode(value, { stream: true });
        const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
        if (complete) {
          frames.splice(0, frames.length, ...parseFrames(complete).frames);
          notify();
        }
      }
      text += decoder.decode();
      frames.splice(0, frames.length, ...parseFrames(text).frames);
      notify();
      return frames;
    })();
    // Failures surface through `done` and `waitFor`; this keeps an unobserved one from crashing the process.
    done.catch(() => undefined);

    const onEvent: LiveRun['onEvent'] = (listener) => {
      let seen = 0;
      const check = () => {
        while (seen < frames.length) listener(frames[seen++].event);
      };
      listeners.add(check);
      check();
    };
    const waitFor: LiveRun['waitFor'] = (predicate, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const hit = frames.find((f) => predicate(f.event));
          if (hit) {
            cleanup();
            resolve(hit.event);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `event not seen within ${timeoutMs} ms; saw ${frames.map((f) => f.event.type).join(',')}`,
            ),
          );
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        done.then(
          () => {
            check();
            if (listeners.has(check)) {
              cleanup();
              if (res.status !== 200) return reject(new Error(`run refused: ${res.status} ${text}`));
              reject(
                new Error(`the stream ended without it; saw ${frames.map((f) => f.event.type).join(',')}`),
              );
            }
          },
          (err: unknown) => {
            cleanup();
            if (res.status !== 200) err = new Error(`run refused: ${res.status} ${text}`);
            reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
        check();
      });
    const bytes = () => {
      const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) {
        all.set(c, at);
        at += c.length;
      }
      return all;
    };
    return { res, frames, raw: () => text, bytes, onEvent, waitFor, done };
  };

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
