import type { AGUIEvent } from '@ag-ui/core';
import type { EventSourceMessage } from 'eventsource-parser';
import { isMoved, reconnecting, type RejoinOptions, type Verdict } from './reconnect';

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
    return reconnecting(
      {
        name: 'thread',
        quietAbort: true,
        open: (_first, signal) => this.open(this.lastEventId, signal),
        read: (message) => this.read(message),
        reconnecting: () => void this.rejoins++,
      },
      this.options,
    );
  }

  private read(message: EventSourceMessage): Verdict {
    const event = JSON.parse(message.data) as AGUIEvent;
    // A replica that must go ends its relay so: the run goes on, the stream reconnects.
    if (!message.id && isMoved(event)) return 'reconnect';
    if (message.id) this.lastEventId = message.id;
    return { event };
  }
}
