import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { AguiEvent } from './agui-events';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

const PING = ': ping\n\n';

/**
 * Writes one run's events as SSE (CONTRACT section 3: `id: <seq>` then `data: <json>`, LF only).
 *
 * Events that arrive in the same event-loop turn are written together in one socket write, and
 * consecutive TEXT_MESSAGE_CONTENT deltas of one message among them are merged into one event: the
 * client sees the same text with fewer frames. This is what keeps the transport from being the
 * bottleneck (Nest's built-in `@Sse` pays a promise per event). The run already hands over one delta
 * per turn (RunExecution.bufferText); what this merges is the delta a text's end flushes early.
 */
export class SseWriter {
  private seq = 0;
  private pending: AguiEvent[] = [];
  private flushScheduled = false;
  private waitingForDrain = false;
  private finished = false;
  private lastWriteAt = Date.now();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly raw: ServerResponse;

  constructor(reply: FastifyReply, events$: Observable<AguiEvent>, heartbeatMs: number) {
    reply.hijack();
    this.raw = reply.raw;
    this.raw.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), ...SSE_HEADERS });
    this.heartbeat = setInterval(() => this.ping(heartbeatMs), Math.max(5, Math.floor(heartbeatMs / 2)));
    this.heartbeat.unref();
    const subscription = events$.subscribe({
      next: (event) => this.enqueue(event),
      complete: () => this.end(),
      error: () => this.end(),
    });
    // The socket closing before the run ended means the client went away: unsubscribing aborts the run.
    this.raw.once('close', () => {
      clearInterval(this.heartbeat);
      if (!this.finished) {
        this.finished = true;
        subscription.unsubscribe();
      }
    });
    this.raw.on('drain', () => {
      this.waitingForDrain = false;
      if (this.pending.length) this.flush();
    });
  }

  private enqueue(event: AguiEvent): void {
    if (this.finished) return;
    const last = this.pending[this.pending.length - 1];
    if (
      event.type === 'TEXT_MESSAGE_CONTENT' &&
      last?.type === 'TEXT_MESSAGE_CONTENT' &&
      last.messageId === event.messageId
    ) {
      // The pending event is this writer's own copy (see below): extend it in place.
      last.delta += event.delta;
    } else {
      this.pending.push(event.type === 'TEXT_MESSAGE_CONTENT' ? { ...event } : event);
    }
    // The first event (RUN_STARTED) goes out at once, with the headers in the same write, before any engine work.
    if (this.seq === 0) return this.flush();
    if (!this.flushScheduled && !this.waitingForDrain) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        if (!this.waitingForDrain) this.flush();
      });
    }
  }

  private flush(): void {
    if (!this.pending.length || this.raw.destroyed) return;
    let frames = '';
    for (const event of this.pending) frames += `id: ${++this.seq}\ndata: ${JSON.stringify(event)}\n\n`;
    this.pending = [];
    this.lastWriteAt = Date.now();
    if (!this.raw.write(frames)) this.waitingForDrain = true;
  }

  private ping(heartbeatMs: number): void {
    if (this.finished || this.waitingForDrain || Date.now() - this.lastWriteAt < heartbeatMs) return;
    this.lastWriteAt = Date.now();
    this.raw.write(PING);
  }

  private end(): void {
    if (this.finished) return;
    this.finished = true;
    clearInterval(this.heartbeat);
    if (this.raw.destroyed) return;
    // The terminal event goes out now, with whatever is still pending, even while waiting for drain.
    this.waitingForDrain = false;
    this.flush();
    this.raw.end();
  }
}
