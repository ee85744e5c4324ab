import { Inject, Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { PinoLogger } from 'nestjs-pino';
import type { Principal } from '../auth/principal';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { Metrics } from '../ops/metrics.service';
import type { RunAgentInput } from '../protocol/run-agent-input.schema';
import { RunsService } from './runs.service';
import { RunStreams } from './stream/run-streams.service';
import { SseResponses } from './stream/sse-responses';
import { ThreadStreams } from './stream/thread-streams.service';

/**
 * `POST /run` (docs/protocol.md#the-run-request): the run claimed (RunsService refuses what can be
 * refused, before any byte), then its events streamed to the request, its thread's followers told.
 */
@Injectable()
export class RunRoute {
  constructor(
    private readonly runs: RunsService,
    private readonly streams: RunStreams,
    private readonly threadStreams: ThreadStreams,
    private readonly sse: SseResponses,
    private readonly metrics: Metrics,
    private readonly pino: PinoLogger,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async serve(input: RunAgentInput, principal: Principal, reply: FastifyReply): Promise<void> {
    const started = process.hrtime.bigint();
    // Heard while the run is claimed: a client that leaves meanwhile must not leave it running.
    const clientGone = whileClaiming(reply.raw);
    // Every log line of this run, in this request's context, names it.
    this.pino.assign({ runId: input.runId, threadId: input.threadId, resourceId: principal.resourceId });
    const run = await this.runs.start(
      input,
      principal,
      clientGone.signal,
      reply.request.socket.remoteAddress,
    );
    // From here the stream hears the client (SseWriter).
    clientGone.stop();
    // The run keeps its validated input; the parsed body Fastify holds for the request's length (the
    // whole stream) is not read again.
    reply.request.body = undefined;
    if (!run) {
      // Nobody to answer: the run was recorded cancelled; Fastify must not try to send a reply.
      reply.hijack();
      return;
    }
    this.metrics.timedByController.add(reply.raw);
    this.streams.open(input.runId, run, this.sse.writer(reply));
    if (!run.stateless) this.threadStreams.runStarted(input.threadId);
    // RUN_STARTED (the claim stored it) was written synchronously; the request lasts until the stream ends.
    this.metrics.timeToFirstEvent.observe(secondsSince(started));
    this.observeDurationAtClose(reply.raw, started);
  }

  /**
   * The run's request duration, observed when its stream closes. A method of its own: the listener,
   * held for the length of the run, keeps only what it needs, not the handler's other variables.
   */
  private observeDurationAtClose(raw: ServerResponse, started: bigint): void {
    // `close` comes once: `on` spares the wrapper `once` would keep for the length of the run.
    raw.on('close', () =>
      this.metrics.httpDuration.observe(
        { method: 'POST', route: `${this.config.prefix}/run`, status: '200' },
        secondsSince(started),
      ),
    );
  }
}

const secondsSince = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;

/** Aborts `signal` when the client leaves, until `stop()`: only the claim needs to hear it. */
function whileClaiming(raw: ServerResponse): { signal: AbortSignal; stop: () => void } {
  const gone = new AbortController();
  const left = () => gone.abort();
  if (raw.destroyed) gone.abort();
  else raw.on('close', left);
  return { signal: gone.signal, stop: () => raw.off('close', left) };
}
