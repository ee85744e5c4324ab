import { EventType, type AGUIEvent } from '@ag-ui/core';
import type { EventSourceMessage } from 'eventsource-parser';
import { isMoved, reconnecting, type RejoinOptions, type Verdict } from './reconnect';

export type { RejoinOptions } from './reconnect';

/** Opens one connection to a run's events: after `after` (the last event id held), or from its start. */
export type Open = (after: number | undefined, signal: AbortSignal) => Promise<Response>;

const TERMINAL = new Set<string>([EventType.RUN_FINISHED, EventType.RUN_ERROR]);

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
    return reconnecting(
      {
        name: 'run',
        quietAbort: false,
        open: (first, signal) =>
          first ? this.first(this.options.after, signal) : this.rejoin(this.lastEventId, signal),
        read: (message) => this.read(message),
        reconnecting: () => void this.rejoins++,
      },
      this.options,
    );
  }

  private read(message: EventSourceMessage): Verdict {
    const event = JSON.parse(message.data) as AGUIEvent;
    if (isMoved(event)) return 'reconnect';
    const id = Number(message.id);
    if (Number.isInteger(id)) {
      // A replay may start before what this stream already yielded: each event once.
      if (id <= this.lastEventId) return 'skip';
      this.lastEventId = id;
    }
    return { event, last: TERMINAL.has(event.type) };
  }
}
