import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
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
  private readonly writers = new Set<SseWriter>();
  private timer: NodeJS.Timeout | undefined;

  private constructor(private readonly periodMs: number) {}

  static of(periodMs: number): Heartbeat {
    let heartbeat = Heartbeat.byPeriod.get(periodMs);
    if (!heartbeat) Heartbeat.byPeriod.set(periodMs, (heartbeat = new Heartbeat(periodMs)));
    return heartbeat;
  }

  add(writer: SseWriter): void {
    this.writers.add(writer);
    if (this.timer) return;
    this.timer = setInterval(
      () => this.writers.forEach((w) => w.tick(this.periodMs)),
      Math.max(5, Math.floor(Math.min(this.periodMs, WRITE_TIMEOUT_CHECK_MS) / 2)),
    );
    this.timer.unref();
  }

  delete(writer: SseWriter): void {
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
  private waitingForDrain = false;
  private drainWaiters: Array<() => void> = [];
  private lastWriteAt = Date.now();
  /** When the socket last stopped taking writes (a write returned false), while it has not drained. */
  private stalledSince = 0;
  private readonly heartbeat: Heartbeat;
  private readonly raw: ServerResponse;

  constructor(
    reply: FastifyReply,
    private readonly options: SseWriterOptions,
    after = 0,
  ) {
    this.lastSeq = this.sentSeq = after;
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
    this.heartbeat = Heartbeat.of(options.heartbeatMs);
    this.heartbeat.add(this);
    // `close` comes once: `on` spares the wrapper `once` would keep for the length of the stream.
    this.raw.on('close', () => {
      this.heartbeat.delete(this);
      this.finished = true;
      this.drainWaiters.splice(0).forEach((resolve) => resolve());
      this.handlers.closed?.();
    });
    this.raw.on('drain', () => {
      this.waitingForDrain = false;
      this.stalledSince = 0;
      if (this.queued.length) this.write(this.queued.join(''));
      this.sentSeq = this.lastSeq;
      this.queued = [];
      this.queuedBytes = 0;
      if (!this.waitingForDrain) this.drainWaiters.splice(0).forEach((resolve) => resolve());
      if (this.isBehind && !this.waitingForDrain) {
        this.isBehind = false;
        this.handlers.drained?.();
      }
    });
  }

  /**
   * Half the queue allowed is taken: a reader of storage waits for {@link drained} before sending
   * more, so it goes at the socket's pace without ever falling behind (waiting for a full drain after
   * every chunk would cost a round of TCP acknowledgements each).
   */
  get congested(): boolean {
    return this.waitingForDrain && this.queuedBytes >= this.options.maxQueuedBytes / 2;
  }

  /** Resolves when the socket drained (or closed). */
  drained(): Promise<void> {
    if (!this.waitingForDrain || this.finished) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  push(chunk: Chunk): void {
    if (this.finished || this.isBehind || chunk.last <= this.lastSeq) return;
    if (chunk.first > this.lastSeq + 1) return this.fallBehind();
    const frames = framesAfter(chunk, this.lastSeq);
    this.lastSeq = chunk.last;
    if (!this.waitingForDrain) {
      this.sentSeq = this.lastSeq;
      return this.write(frames);
    }
    this.queued.push(frames);
    this.queuedBytes += frames.length;
    if (this.queuedBytes > this.options.maxQueuedBytes) {
      // Dropped: the stream resumes after what the socket has.
      this.lastSeq = this.sentSeq;
      this.queued = [];
      this.queuedBytes = 0;
      this.fallBehind();
    }
  }

  /** The run's log is complete: what is queued goes out, then `unlogged` (frames without ids), then the stream ends. */
  end(unlogged?: string): void {
    if (this.finished) return;
    this.finished = true;
    this.heartbeat.delete(this);
    if (this.raw.destroyed) return;
    if (this.queued.length) this.raw.write(this.queued.join(''));
    if (unlogged) this.raw.write(unlogged);
    this.raw.end();
  }

  /** Ends the stream without a terminal event: the client reconnects with Last-Event-ID (a replica draining). */
  close(): void {
    this.isBehind = false;
    this.queued = [];
    this.end();
  }

  private fallBehind(): void {
    this.isBehind = true;
    this.handlers.behind?.();
    if (!this.waitingForDrain) {
      // Not actually waiting (a gap): catch up on the next turn.
      setImmediate(() => {
        if (this.isBehind && !this.finished) {
          this.isBehind = false;
          this.handlers.drained?.();
        }
      });
    }
  }

  private write(frames: string): void {
    if (this.raw.destroyed) return;
    this.lastWriteAt = Date.now();
    if (this.raw.write(frames)) return;
    this.waitingForDrain = true;
    this.stalledSince ||= this.lastWriteAt;
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
