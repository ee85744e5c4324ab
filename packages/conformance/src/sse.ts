import { createParser } from 'eventsource-parser';

/** One SSE event as the SSE specification dispatches it: its `id:` and `event:` fields when present, and its data. */
export type SseFrame = { id?: string; event?: string; data: string };

/** An AG-UI event: the JSON of one SSE event's data. */
export type Event = Record<string, any>;

/** A response body read as an SSE stream, as it arrives. */
export type SseStream = {
  res: Response;
  /** The SSE events dispatched so far. */
  frames: SseFrame[];
  /** The AG-UI event of each frame whose data is a JSON object with a `type` (in order). */
  events: Event[];
  /** Comment lines (`: …`), without the colon. */
  comments: string[];
  /** What a client could not use: data that is not one AG-UI event, unknown fields, an event cut off at the end. */
  problems: string[];
  /** What arrived so far, decoded as the SSE specification decodes it (UTF-8, U+FFFD for bad bytes). */
  raw: () => string;
  bytes: () => Uint8Array;
  /** True once the server ended the body; false while it streams, or when the kit aborted it. */
  ended: () => boolean;
  /** Resolves when the body ends or the read is aborted; rejects on a network error. */
  done: Promise<void>;
  /** Calls `listener` for every event, those already seen first. */
  onEvent: (listener: (event: Event) => void) => void;
  /** The first event `predicate` accepts; rejects when the stream ends without it or after `timeoutMs`. */
  waitFor: (predicate: (event: Event) => boolean, timeoutMs?: number) => Promise<Event>;
  /** Stops reading and closes the connection. */
  abort: () => void;
};

const typesOf = (events: Event[]) => events.map((e) => String(e.type)).join(', ') || 'no events';

/**
 * Reads `res.body` as an SSE stream with eventsource-parser, which follows the SSE specification: `id:`
 * optional, `event:` lines, comments, CRLF, LF or CR line ends, multi-line `data:` joined with LF, a
 * leading BOM dropped. A body that is not 200 is read at once and has no events.
 */
export function readSse(res: Response, defaultTimeoutMs = 15_000): SseStream {
  const frames: SseFrame[] = [];
  const events: Event[] = [];
  const comments: string[] = [];
  const problems: string[] = [];
  const chunks: Uint8Array[] = [];
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  let text = '';
  let ended = false;
  let cutOff = false;
  const controller = new AbortController();

  const parser = createParser({
    onEvent: (message) => {
      if (cutOff) {
        problems.push(
          `the stream ended in the middle of an event (no blank line after it), so a client drops it: ${brief(message.data)}`,
        );
        return;
      }
      const frame: SseFrame = { data: message.data };
      if (message.id !== undefined) frame.id = message.id;
      if (message.event !== undefined) frame.event = message.event;
      frames.push(frame);
      let event: unknown;
      try {
        event = JSON.parse(message.data);
      } catch {
        problems.push(`event ${frames.length}: data is not JSON: ${brief(message.data)}`);
        return;
      }
      if (typeof event !== 'object' || event === null || Array.isArray(event) || !('type' in event))
        problems.push(
          `event ${frames.length}: data is not an AG-UI event (an object with a type): ${brief(message.data)}`,
        );
      else events.push(event);
    },
    onComment: (comment) => void comments.push(comment),
    onError: (error) => void problems.push(`SSE: ${error.message}`),
  });

  const done = (async () => {
    if (res.status !== 200 || !res.body) {
      text = await res.text();
      ended = true;
      return;
    }
    const decoder = new TextDecoder('utf-8');
    const reader = res.body.getReader();
    controller.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), {
      once: true,
    });
    try {
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) break;
        chunks.push(value);
        const piece = decoder.decode(value, { stream: true });
        text += piece;
        parser.feed(piece);
        notify();
      }
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    }
    if (controller.signal.aborted) return;
    const rest = decoder.decode();
    text += rest;
    parser.feed(rest);
    // A blank line now dispatches an event the server left unfinished: the specification drops it.
    cutOff = true;
    parser.feed('\n\n');
    ended = true;
  })().finally(notify);
  // Failures surface through `done` and `waitFor`; this keeps an unobserved one from crashing the process.
  done.catch(() => undefined);

  const onEvent: SseStream['onEvent'] = (listener) => {
    let seen = 0;
    const check = () => {
      while (seen < events.length) listener(events[seen++]);
    };
    listeners.add(check);
    check();
  };

  const waitFor: SseStream['waitFor'] = (predicate, timeoutMs = defaultTimeoutMs) =>
    new Promise((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      const check = () => {
        const hit = events.find(predicate);
        if (hit) {
          cleanup();
          resolve(hit);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`not seen within ${timeoutMs} ms; the stream had: ${typesOf(events)}`));
      }, timeoutMs);
      listeners.add(check);
      done.then(
        () => {
          check();
          if (!listeners.has(check)) return;
          cleanup();
          reject(
            new Error(
              res.status !== 200
                ? `the run was refused: ${res.status} ${brief(text)}`
                : `the stream ended without it; it had: ${typesOf(events)}`,
            ),
          );
        },
        (err: unknown) => {
          cleanup();
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

  return {
    res,
    frames,
    events,
    comments,
    problems,
    raw: () => text,
    bytes,
    ended: () => ended,
    done,
    onEvent,
    waitFor,
    abort: () => controller.abort(),
  };
}

/** A value shortened for a report line. */
export function brief(value: unknown, max = 240): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > max ? `${text.slice(0, max)}…` : text;
}
