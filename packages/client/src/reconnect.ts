import { EventType, type AGUIEvent } from '@ag-ui/core';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { IoBridgeError, errorOf } from './errors';

export type RejoinOptions = {
  /** Reconnections in a row without an event in between before giving up (default 6). */
  attempts?: number;
  /** The first wait before a reconnection, doubled each time up to 5 s (default 250 ms). */
  delayMs?: number;
  /** A connection silent this long is taken as dropped (default 45 s; the server pings every 15 s). */
  idleTimeoutMs?: number;
};

/** What one server-sent message is to a stream: an event to yield (`last`: the stream ends after it), one to skip, or the end of this connection. */
export type Verdict = { event: AGUIEvent; last?: boolean } | 'skip' | 'reconnect';

/** One kind of stream that reconnects (a run's, a thread's): how it connects and reads. */
export type Reconnectable = {
  /** Opens a connection; `first` is the caller's own request, whose failure is the caller's to see. */
  open(first: boolean, signal: AbortSignal): Promise<Response>;
  read(message: EventSourceMessage): Verdict;
  /** Called before each reconnection. */
  reconnecting(): void;
  /** What CONNECTION_LOST says was lost ("run", "thread"). */
  name: string;
  /** Whether aborting the caller's signal ends the iteration quietly (else it throws the signal's reason). */
  quietAbort: boolean;
};

/** The server ends a relay this way when its replica must go: the run goes on, the client rejoins. */
export const isMoved = (event: AGUIEvent) => event.type === EventType.RUN_ERROR && event.code === 'RUN_MOVED';

/** A status worth retrying on a reconnection: the stream may be back once the server or network is. */
const transient = (status: number) => status === 429 || status >= 500;

/**
 * The events of `stream`, reconnecting when a connection drops, goes silent for `idleTimeoutMs` or
 * is moved, with a doubling wait, until `attempts` reconnections in a row brought no event
 * (CONNECTION_LOST). An answer the server refuses for good (a 404, a 403), and any refusal of the
 * caller's own first request, is thrown as IoBridgeError.
 */
export async function* reconnecting(
  stream: Reconnectable,
  options: RejoinOptions & { signal?: AbortSignal },
): AsyncGenerator<AGUIEvent> {
  const { signal, attempts = 6, delayMs = 250, idleTimeoutMs = 45_000 } = options;
  const aborted = () => {
    if (!stream.quietAbort) throw signal!.reason;
  };
  let failures = 0;
  for (let first = true; ; first = false) {
    if (signal?.aborted) return aborted();
    const connection = new AbortController();
    const stop = () => connection.abort(signal?.reason);
    signal?.addEventListener('abort', stop, { once: true });
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(new Error('idle')), idleTimeoutMs);
    };
    let lost: unknown;
    let opening = true;
    try {
      touch();
      const res = await stream.open(first, connection.signal);
      opening = false;
      if (!res.ok && (first || !transient(res.status))) throw await errorOf(res);
      if (!res.ok) lost = await errorOf(res);
      else
        for await (const message of frames(res.body!, touch)) {
          const verdict = stream.read(message);
          if (verdict === 'reconnect') break;
          if (verdict === 'skip') continue;
          failures = 0;
          yield verdict.event;
          if (verdict.last) return;
        }
    } catch (err) {
      if (signal?.aborted) return aborted();
      if (err instanceof IoBridgeError || (first && opening)) throw err;
      lost = err;
    } finally {
      clearTimeout(idle);
      signal?.removeEventListener('abort', stop);
      connection.abort();
    }
    if (++failures > attempts)
      throw new IoBridgeError(
        0,
        'CONNECTION_LOST',
        `The ${stream.name}'s stream was lost: ${describe(lost)}`,
      );
    try {
      await wait(Math.min(delayMs * 2 ** (failures - 1), 5000), signal);
    } catch (err) {
      if (stream.quietAbort) return;
      throw err;
    }
    stream.reconnecting();
  }
}

/** The server-sent events of a response body; `onBytes` on every chunk (heartbeats too). */
async function* frames(body: ReadableStream<Uint8Array>, onBytes: () => void) {
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

const describe = (err: unknown) =>
  err instanceof Error ? err.message : err === undefined ? 'it ended early' : JSON.stringify(err);

function wait(ms: number, signal?: AbortSignal): Promise<void> {
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
