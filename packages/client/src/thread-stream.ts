import type { AGUIEvent } from '@ag-ui/core';
import { IoBridgeError, errorOf } from './errors';
import { describe, frames, isMoved, transient, wait, type RejoinOptions } from './run-stream';

/** Opens one connection to a thread's events: after `after` (the last `<run>:<seq>` id held), or from now. */
export type OpenThread = (after: string | undefined, signal: AbortSignal) => Promise<Response>;

/**
 * A thread's runs as one async iterable of AG-UI events (`GET /threads/:threadId/events`): the
 * active run from `RUN_STARTED`, then every later run of the thread, whoever starts it. It never
 * ends by itself: abort its signal (the iteration then ends) or `break`. When the connection drops
 * (or goes silent, or the server drains) it reconnects with `Last-Event-ID`, so each event comes once
 * and in order. Iterate it once.
 */
export class ThreadStream implements AsyncIterable<AGUIEvent> {
  /** The id of the last event yielded, `<run>:<seq>`: what a later follow passes as `after`. */
  lastEventId: string | undefined;
  /** How many times the stream reconnected. */
  rejoins = 0;
  private used = false;

  constructor(
    readonly threadId: string,
    private readonly open: OpenThread,
    private readonly options: RejoinOptions & { signal?: AbortSignal; after?: string } = {},
  ) {
    this.lastEventId = options.after;
  }

  [Symbol.asyncIterator](): AsyncIterator<AGUIEvent> {
    if (this.used) throw new Error('A ThreadStream can be iterated once');
    this.used = true;
    return this.events();
  }

  private async *events(): AsyncGenerator<AGUIEvent> {
    const { signal, attempts = 6, delayMs = 250, idleTimeoutMs = 45_000 } = this.options;
    let failures = 0;
    for (let first = true; !signal?.aborted; first = false) {
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
        const res = await this.open(this.lastEventId, connection.signal);
        opening = false;
        // The first answer is the caller's to see (a 404, a 429); a reconnection retries what may pass.
        if (!res.ok && (first || !transient(res.status))) throw await errorOf(res);
        if (!res.ok) lost = await errorOf(res);
        else {
          for await (const message of frames(res.body!, touch)) {
            const event = JSON.parse(message.data) as AGUIEvent;
            // A replica that must go ends its relay so: the run goes on, the stream reconnects.
            if (!message.id && isMoved(event)) break;
            if (message.id) this.lastEventId = message.id;
            failures = 0;
            yield event;
          }
        }
      } catch (err) {
        if (signal?.aborted) return;
        // The first connection failing at the network level is the caller's to see; later ones retry.
        if (err instanceof IoBridgeError || (first && opening)) throw err;
        lost = err;
      } finally {
        clearTimeout(idle);
        signal?.removeEventListener('abort', stop);
        connection.abort();
      }
      if (signal?.aborted) return;
      if (++failures > attempts)
        throw new IoBridgeError(0, 'CONNECTION_LOST', `The thread's stream was lost: ${describe(lost)}`);
      try {
        await wait(Math.min(delayMs * 2 ** (failures - 1), 5000), signal);
      } catch {
        return;
      }
      this.rejoins++;
    }
  }
}
