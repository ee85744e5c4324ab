import { EventType, type AGUIEvent } from '@ag-ui/core';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { IoBridgeError, errorOf } from './errors';

/** Opens one connection to a run's events: after `after` (the last event id held), or from its start. */
export type Open = (after: number | undefined, signal: AbortSignal) => Promise<Response>;

export type RejoinOptions = {
  /** Reconnections in a row without an event in between before giving up (default 6). */
  attempts?: number;
  /** The first wait before a reconnection, doubled each time up to 5 s (default 250 ms). */
  delayMs?: number;
  /** A connection silent this long is taken as dropped (default 45 s; the server pings every 15 s). */
  idleTimeoutMs?: number;
};

const TERMINAL = new Set<string>([EventType.RUN_FINISHED, EventType.RUN_ERROR]);

/** The server ends a relay this way when its replica must go: the run goes on, the client rejoins. */
export const isMoved = (event: AGUIEvent) => event.type === EventType.RUN_ERROR && event.code === 'RUN_MOVED';

/** A status worth retrying on rejoin: the run may still be there once the server or network is back. */
export const transient = (status: number) => status === 429 || status >= 500;

/**
 * A run's AG-UI events as an async iterable, to its terminal event. When the connection drops (or
 * goes silent, or the server moves the run) it reconnects to `GET /runs/:runId/events` with
 * `Last-Event-ID`, so the consumer sees each event once and in order. Iterate it once.
 */
export class RunStream implements AsyncIterable<AGUIEvent> {
  /** The id (sequence number) of the last event yielded: what a later rejoin passes as `Last-Event-ID`. */
  lastEventId = 0;
  /** How many times the stream reconnected. */
  rejoins = 0;
  private used = false;

  constructor(
    readonly runId: string,
    private readonly first: Open,
    private readonly rejoin: Open,
    private readonly options: RejoinOptions & { signal?: AbortSignal; after?: number } = {},
  ) {
    if (options.after !== undefined) this.lastEventId = options.after;
  }

  [Symbol.asyncIterator](): AsyncIterator<AGUIEvent> {
    if (this.used) throw new Error('A RunStream can be iterated once');
    this.used = true;
    return this.events();
  }

  private async *events(): AsyncGenerator<AGUIEvent> {
    const { signal, attempts = 6, delayMs = 250, idleTimeoutMs = 45_000 } = this.options;
    let failures = 0;
    let open = this.first;
    let initial = this.options.after;
    for (;;) {
      signal?.throwIfAborted();
      const connection = new AbortController();
      const stop = () => connection.abort(signal?.reason);
      signal?.addEventListener('abort', stop, { once: true });
      let idle: ReturnType<typeof setTimeout> | undefined;
      const touch = () => {
        clearTimeout(idle);
        idle = setTimeout(() => connection.abort(new Error('idle')), idleTimeoutMs);
      };
      let lost: unknown;
      try {
        touch();
        const after = open === this.first ? initial : this.lastEventId;
        const res = await open(after, connection.signal).catch((err: unknown) => {
          // The first POST failing at the network level is the caller's to see; a rejoin retries.
          if (open === this.first || signal?.aborted) throw err;
          lost = err;
          return undefined;
        });
        if (res && !res.ok) {
          if (open === this.first || !transient(res.status)) throw await errorOf(res);
          lost = await errorOf(res);
        } else if (res) {
          for await (const message of frames(res.body!, touch)) {
            const event = JSON.parse(message.data) as AGUIEvent;
            if (isMoved(event)) break;
            const id = Number(message.id);
            if (Number.isInteger(id)) {
              // A replay may start before what this stream already yielded: each event once.
              if (id <= this.lastEventId) continue;
              this.lastEventId = id;
            }
            failures = 0;
            yield event;
            if (TERMINAL.has(event.type)) return;
          }
        }
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (err instanceof IoBridgeError) throw err;
        lost = err;
      } finally {
        clearTimeout(idle);
        signal?.removeEventListener('abort', stop);
        connection.abort();
      }
      // The connection ended before the terminal event: rejoin after what was yielded.
      if (++failures > attempts)
        throw new IoBridgeError(0, 'CONNECTION_LOST', `The run's stream was lost: ${describe(lost)}`);
      await wait(Math.min(delayMs * 2 ** (failures - 1), 5000), signal);
      open = this.rejoin;
      initial = undefined;
      this.rejoins++;
    }
  }
}

/** The server-sent events of a response body; `onBytes` on every chunk (heartbeats too). */
export async function* frames(body: ReadableStream<Uint8Array>, onBytes: () => void) {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onBytes();
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length) yield queue.shift()!;
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

export const describe = (err: unknown) =>
  err instanceof Error ? err.message : err === undefined ? 'it ended early' : JSON.stringify(err);

export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}
