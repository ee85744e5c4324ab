import { randomUUID } from 'node:crypto';

/**
 * One event of a stream. `unlogged`: sent without an id, for that connection only (the run's log
 * could not store it); numbered after the frame before it, so the stream rules still read it in order.
 */
export type Frame = { id: number; event: Record<string, any>; unlogged?: true };

let counter = 0;
export const uid = (prefix: string) => `${prefix}-${randomUUID()}-${++counter}`;

/** A RunAgentInput with one user message, fresh ids, and any field overridden. */
export function runInput(text: string, extra: Record<string, unknown> = {}) {
  return {
    threadId: uid('thread'),
    runId: uid('run'),
    messages: [{ id: uid('msg'), role: 'user', content: text }],
    tools: [],
    context: [],
    ...extra,
  };
}

/**
 * forwardedProps naming memory as io.Assist sends them on a chat turn: the run is stored in its
 * thread, created when missing (docs/protocol.md#the-run-request). A run without them on a new thread is stateless.
 */
export const memoryOf = (threadId: string, resource?: string) => ({
  memory: { thread: threadId, ...(resource !== undefined ? { resource } : {}) },
});

export async function postRun(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/**
 * Parses an SSE body strictly as docs/protocol.md#the-stream writes it: LF only, `id: <n>` then `data: <json>`
 * (the last frames may lack their id: see {@link Frame}),
 * a blank line after each event, `: ping` comments allowed. Anything else throws.
 */
export function parseFrames(raw: string): { frames: Frame[]; pings: number } {
  if (raw.includes('\r')) throw new Error('CR in stream');
  if (!raw.endsWith('\n\n')) throw new Error('stream does not end with a blank line');
  const blocks = raw.slice(0, -2).split('\n\n');
  const frames: Frame[] = [];
  let pings = 0;
  for (const block of blocks) {
    if (block === ': ping') {
      pings++;
      continue;
    }
    const m = /^(?:id: (\d+)\n)?data: (.+)$/.exec(block);
    if (!m) throw new Error(`malformed frame: ${JSON.stringify(block.slice(0, 200))}`);
    if (m[1] !== undefined && frames.at(-1)?.unlogged)
      throw new Error('a frame with an id after one without');
    if (m[1] !== undefined) frames.push({ id: Number(m[1]), event: JSON.parse(m[2]) });
    else frames.push({ id: (frames.at(-1)?.id ?? 0) + 1, event: JSON.parse(m[2]), unlogged: true });
  }
  return { frames, pings };
}

export async function runToFrames(
  url: string,
  body: unknown,
): Promise<{ res: Response; raw: string; frames: Frame[] }> {
  const res = await postRun(url, body);
  const raw = await res.text();
  return { res, raw, frames: res.ok ? parseFrames(raw).frames : [] };
}

export const types = (frames: Frame[]) => frames.map((f) => f.event.type as string);

/** The text the run showed: its TEXT_MESSAGE_CONTENT deltas, joined. */
export const shownText = (frames: Frame[]) =>
  frames
    .filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT')
    .map((f) => f.event.delta as string)
    .join('');

/** Posts a run and reads it until its first TEXT_MESSAGE_CONTENT; aborting the controller disconnects the client. */
export async function postRunUntilText(url: string, body: unknown): Promise<AbortController> {
  const controller = new AbortController();
  const res = await postRun(url, body, { signal: controller.signal });
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('TEXT_MESSAGE_CONTENT'))
    seen += new TextDecoder().decode((await reader.read()).value);
  return controller;
}

export type Event = Record<string, any>;

/** A run read as it streams: wait for a given event, then act (post a tool result, cancel, disconnect). */
export type LiveRun = {
  res: Response;
  /** The complete events so far. */
  frames: Frame[];
  /** What arrived so far, as text and as bytes. */
  raw: () => string;
  bytes: () => Uint8Array;
  /** Calls `listener` for every event, those already seen first. */
  onEvent: (listener: (event: Event) => void) => void;
  /** The first event `predicate` accepts; rejects when the stream ends without it or after `timeoutMs`. */
  waitFor: (predicate: (event: Event) => boolean, timeoutMs?: number) => Promise<Event>;
  done: Promise<Frame[]>;
};

/**
 * Reads a `POST /run` response as it streams, strictly (UTF-8, docs/protocol.md#the-stream framing). A refused run (not
 * 200) has no frames: its body is read at once, so a failing check can show it.
 */
export async function readRun(res: Response, defaultTimeoutMs = 10_000): Promise<LiveRun> {
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
  const waitFor: LiveRun['waitFor'] = (predicate, timeoutMs = defaultTimeoutMs) =>
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
}

/** POST /run read as it streams; a refused run throws with its answer. */
export async function openRun(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<LiveRun> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`run refused: ${res.status} ${await res.text()}`);
  return readRun(res);
}
