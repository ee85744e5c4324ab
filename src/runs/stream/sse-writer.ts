import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AppConfig } from '../../config/config';
import type { Metrics } from '../../ops/metrics.service';
import { Chunk, framesAfter } from '../storage/run-events.repository';
import { FrameSink } from './run-log';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

const PING = ': ping\n\n';
/** The write timeout is checked at least this often (and at least every half heartbeat). */
const WRITE_TIMEOUT_CHECK_MS = 1_000;

/**
 * One timer for every stream of a heartbeat period, instead of one per stream: each stream that wrote
 * nothing for the period gets a comment, and a stream whose socket took nothing for its write timeout
 * is closed. The timer stops while no stream is open.
 */
class Heartbeat {
  private static readonly byPeriod = new Map<number, Heartbeat>();
  private readonly writers = new Set<SseConnection>();
  private timer: NodeJS.Timeout | undefined;

  private constructor(private readonly periodMs: number) {}

  static of(periodMs: number): Heartbeat {
    let heartbeat = Heartbeat.byPeriod.get(periodMs);
    if (!heartbeat) Heartbeat.byPeriod.set(periodMs, (heartbeat = new Heartbeat(periodMs)));
    return heartbeat;
  }

  add(writer: SseConnection): void {
    this.writers.add(writer);
    if (this.timer) return;
    this.timer = setInterval(
      () => this.writers.forEach((w) => w.tick(this.periodMs)),
      Math.max(5, Math.floor(Math.min(this.periodMs, WRITE_TIMEOUT_CHECK_MS) / 2)),
    );
    this.timer.unref();
  }

  delete(writer: SseConnection): void {
    this.writers.delete(writer);
    if (this.writers.size || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

export type SseWriterOptions = {
  heartbeatMs: number;
  /** Frames queued behind a slow socket beyond which the stream stops taking them and reads storage. */
  maxQueuedBytes: number;
  /** A socket that takes nothing for this long (a write waiting for its drain) is closed. */
  writeTimeoutMs: number;
  /** Called once when the stream is closed for its write timeout. */
  onWriteTimeout?: () => void;
};

/** The options of every stream, from the configuration. */
export const sseWriterOptions = (config: AppConfig, metrics: Metrics): SseWriterOptions => ({
  heartbeatMs: config.heartbeatMs,
  maxQueuedBytes: config.runEvents.maxQueuedBytes,
  writeTimeoutMs: config.runEvents.writeTimeoutMs,
  onWriteTimeout: () => metrics.streamsClosed.inc({ reason: 'write_timeout' }),
});

/** One run of a thread's stream (see SseWriter's constructor). */
export type Segment = { idPrefix: string; ended: () => void };

/** What the stream's owner hears. */
export type SseWriterHandlers = {
  /** The socket closed (the client left, or the stream ended). */
  closed?: () => void;
  /** Too far behind: the writer dropped what it queued and takes no live chunks until it caught up. */
  behind?: () => void;
  /** The socket drained after falling behind: resume from `lastSeq`. */
  drained?: () => void;
};

/**
 * One client's SSE response: its headers, heartbeats, write timeout and the socket's backpressure.
 * A run's stream has one {@link SseWriter} on it; a thread's stream has one per run, in turn
 * (a `Segment`), each ending its run without ending the response.
 */
export class SseConnection {
  /** The response ended, or the socket closed. */
  finished = false;
  /** The socket took a write only partly: the rest waits for its `drain`. */
  waitingForDrain = false;
  /** The writer of the run being streamed, told of drains and of the close. */
  reader: SseWriter | undefined;
  /** Called once when the socket closes. */
  onClose: (() => void) | undefined;
  private drainWaiters: Array<() => void> = [];
  private lastWriteAt = Date.now();
  /** When the socket last stopped taking writes (a write returned false), while it has not drained. */
  private stalledSince = 0;
  private readonly heartbeat: Heartbeat;
  private readonly raw: ServerResponse;

  constructor(
    reply: FastifyReply,
    readonly options: SseWriterOptions,
  ) {
    reply.hijack();
    this.raw = reply.raw;
    const headers: Record<string, string> = {
      ...(reply.getHeaders() as Record<string, string>),
      ...SSE_HEADERS,
    };
    // A client that asked for `Connection: close` (or an HTTP/1.0 one) has the connection closed
    // after the stream: Node does so when the response says `close`, and keeps it with `keep-alive`.
    if (!this.raw.shouldKeepAlive) headers.connection = 'close';
    this.raw.writeHead(200, headers);
    // Sent now, not with the first write: a rejoin of a run that waits (for a browser's tool result)
    // has nothing to send, and its client would see no response until the next heartbeat.
    this.raw.flushHeaders();
    this.heartbeat = Heartbeat.of(options.heartbeatMs);
    this.heartbeat.add(this);
    // `close` comes once: `on` spares the wrapper `once` would keep for the length of the stream.
    this.raw.on('close', () => {
      this.heartbeat.delete(this);
      this.finished = true;
      this.drainWaiters.splice(0).forEach((resolve) => resolve());
      this.reader?.closed();
      this.onClose?.();
    });
    this.raw.on('drain', () => {
      this.waitingForDrain = false;
      this.stalledSince = 0;
      this.reader?.flushQueued();
      if (this.waitingForDrain) return;
      this.drainWaiters.splice(0).forEach((resolve) => resolve());
      this.reader?.caughtUp();
    });
  }

  /** Resolves when the socket drained (or closed). */
  drained(): Promise<void> {
    if (!this.waitingForDrain || this.finished) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  write(frames: string): void {
    if (this.raw.destroyed) return;
    this.lastWriteAt = Date.now();
    if (this.raw.write(frames)) return;
    this.waitingForDrain = true;
    this.stalledSince ||= this.lastWriteAt;
  }

  /** Writes `tail` whatever the socket's backlog (it is bounded by the caller), then ends the response. */
  end(tail = ''): void {
    this.writeNow(tail);
    if (this.finished) return;
    this.finished = true;
    this.heartbeat.delete(this);
    if (!this.raw.destroyed) this.raw.end();
  }

  /** Writes at once, not waiting for a drain: what a run leaves queued when it ends. */
  writeNow(frames: string): void {
    if (frames && !this.finished && !this.raw.destroyed) this.raw.write(frames);
  }

  /**
   * The Heartbeat's timer: a socket stalled past the write timeout is destroyed (its `close` then
   * tells the owner, and the run follows the disconnect rules); an idle stream gets a comment.
   */
  tick(heartbeatMs: number): void {
    if (this.finished || this.raw.destroyed) return;
    const now = Date.now();
    if (this.waitingForDrain) {
      if (this.stalledSince && now - this.stalledSince >= this.options.writeTimeoutMs) {
        this.options.onWriteTimeout?.();
        this.raw.destroy();
      }
      return;
    }
    if (now - this.lastWriteAt >= heartbeatMs) this.write(PING);
  }
}

/**
 * One client's SSE stream of a run's frames (see RunLog): each chunk goes out in one socket write,
 * in order and exactly once (a chunk overlapping what was sent is cut; one leaving a gap means the
 * stream is behind). While the socket is slow, chunks queue up to `maxQueuedBytes`; past it the
 * queue is dropped and the stream is `behind`: its owner detaches it from the live run and, once
 * the socket drained, serves it from storage from `lastSeq`. Comments keep an idle stream alive.
 */
export class SseWriter implements FrameSink {
  /** The last sequence number taken (written or queued). */
  lastSeq: number;
  /** The last sequence number handed to the socket. */
  private sentSeq: number;
  /** The stream ended with the run's terminal event, or the socket closed. */
  finished = false;
  /** Dropped live chunks: waits for the socket to drain, then catches up. */
  isBehind = false;
  handlers: SseWriterHandlers = {};
  private queued: string[] = [];
  private queuedBytes = 0;
  /** Of a thread's stream: what each frame's id is prefixed with, and who hears that the run ended. */
  private readonly segment: Segment | undefined;

  /**
   * A run's stream on `connection`, after sequence number `after`. With `segment` it is one run of a
   * thread's stream: its frames' ids are prefixed (`<run>:`), and its end (the terminal event, or
   * the socket closed) calls `segment.ended` instead of ending the response. `close()` still ends
   * the response: the client reconnects with its Last-Event-ID.
   */
  constructor(
    private readonly connection: SseConnection,
    after = 0,
    segment?: Segment,
  ) {
    this.lastSeq = this.sentSeq = after;
    this.segment = segment;
    this.finished = connection.finished;
    connection.reader = this;
    if (this.finished && segment) queueMicrotask(segment.ended);
  }

  /**
   * Half the queue allowed is taken: a reader of storage waits for {@link drained} before sending
   * more, so it goes at the socket's pace without ever falling behind (waiting for a full drain after
   * every chunk would cost a round of TCP acknowledgements each).
   */
  get congested(): boolean {
    return this.connection.waitingForDrain && this.queuedBytes >= this.connection.options.maxQueuedBytes / 2;
  }

  /** Resolves when the socket drained (or closed). */
  drained(): Promise<void> {
    return this.finished ? Promise.resolve() : this.connection.drained();
  }

  push(chunk: Chunk): void {
    if (this.finished || this.isBehind || chunk.last <= this.lastSeq) return;
    if (chunk.first > this.lastSeq + 1) return this.fallBehind();
    const frames = this.ids(framesAfter(chunk, this.lastSeq));
    this.lastSeq = chunk.last;
    if (!this.connection.waitingForDrain) {
      this.sentSeq = this.lastSeq;
      return this.connection.write(frames);
    }
    this.queued.push(frames);
    this.queuedBytes += frames.length;
    if (this.queuedBytes > this.connection.options.maxQueuedBytes) {
      // Dropped: the stream resumes after what the socket has.
      this.lastSeq = this.sentSeq;
      this.queued = [];
      this.queuedBytes = 0;
      this.fallBehind();
    }
  }

  /**
   * The run's log is complete: what is queued goes out, then `unlogged` (frames without ids), then the
   * stream ends (a thread's stream goes on with its next run).
   */
  end(unlogged?: string): void {
    if (this.finished) return;
    this.finished = true;
    const tail = this.queued.join('') + (unlogged ?? '');
    this.queued = [];
    if (!this.segment) return this.connection.end(tail);
    this.connection.writeNow(tail);
    if (this.connection.reader === this) this.connection.reader = undefined;
    this.handlers.closed?.();
    this.segment.ended();
  }

  /** Ends the stream without a terminal event: the client reconnects with Last-Event-ID (a replica draining). */
  close(): void {
    this.isBehind = false;
    this.queued = [];
    this.connection.end();
    this.end();
  }

  /** The connection's socket closed. */
  closed(): void {
    const wasFinished = this.finished;
    this.finished = true;
    this.handlers.closed?.();
    if (!wasFinished) this.segment?.ended();
  }

  /** The connection's socket drained: what is queued goes out. */
  flushQueued(): void {
    if (this.queued.length) this.connection.write(this.queued.join(''));
    this.sentSeq = this.lastSeq;
    this.queued = [];
    this.queuedBytes = 0;
  }

  /** The socket took everything: a writer that fell behind catches up. */
  caughtUp(): void {
    if (!this.isBehind) return;
    this.isBehind = false;
    this.handlers.drained?.();
  }

  /** Frames with their ids as this stream names them (a thread's: `<run>:<seq>`). */
  private ids(frames: string): string {
    return this.segment ? frames.replace(/^id: /gm, `id: ${this.segment.idPrefix}`) : frames;
  }

  private fallBehind(): void {
    this.isBehind = true;
    this.handlers.behind?.();
    if (!this.connection.waitingForDrain) {
      // Not actually waiting (a gap): catch up on the next turn.
      setImmediate(() => {
        if (this.isBehind && !this.finished) {
          this.isBehind = false;
          this.handlers.drained?.();
        }
      });
    }
  }
}
