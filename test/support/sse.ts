import { randomUUID } from 'node:crypto';

export type Frame = { id: number; event: Record<string, any> };

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

export async function postRun(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

/**
 * Parses an SSE body strictly as CONTRACT section 3 writes it: LF only, `id: <n>` then `data: <json>`,
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
    const m = /^id: (\d+)\ndata: (.+)$/.exec(block);
    if (!m) throw new Error(`malformed frame: ${JSON.stringify(block.slice(0, 200))}`);
    frames.push({ id: Number(m[1]), event: JSON.parse(m[2]) });
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

/** A run read as it streams: wait for a given event, then act (post a tool result, cancel, disconnect). */
export type LiveRun = {
  frames: Frame[];
  raw: () => string;
  waitFor: (
    predicate: (event: Record<string, any>) => boolean,
    timeoutMs?: number,
  ) => Promise<Record<string, any>>;
  done: Promise<Frame[]>;
};

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
  let text = '';
  const frames: Frame[] = [];
  const listeners = new Set<() => void>();
  const decoder = new TextDecoder();
  const done = (async () => {
    const reader = res.body!.getReader();
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      text += decoder.decode(value, { stream: true });
      const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
      if (complete) {
        frames.splice(0, frames.length, ...parseFrames(complete).frames);
        listeners.forEach((l) => l());
      }
    }
    frames.splice(0, frames.length, ...parseFrames(text).frames);
    listeners.forEach((l) => l());
    return frames;
  })();
  const waitFor: LiveRun['waitFor'] = (predicate, timeoutMs = 10_000) =>
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
      void done.then(check, () => undefined);
      check();
    });
  return { frames, raw: () => text, waitFor, done };
}
