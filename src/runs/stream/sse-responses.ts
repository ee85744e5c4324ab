import { Inject, Injectable } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { Metrics } from '../../ops/metrics.service';
import { SseConnection, SseWriter, SseWriterOptions, sseWriterOptions } from './sse-writer';

/**
 * The SSE plumbing every stream route shares (POST /run, rejoining a run, following a thread): the
 * connection with the configured heartbeat, queue bound and write timeout, and a reader's place
 * among its owner's readers held for as long as its socket is open (docs/limits.md).
 */
@Injectable()
export class SseResponses {
  private readonly options: SseWriterOptions;

  constructor(@Inject(APP_CONFIG) config: AppConfig, metrics: Metrics) {
    this.options = sseWriterOptions(config, metrics);
  }

  connection(reply: FastifyReply): SseConnection {
    return new SseConnection(reply, this.options);
  }

  /** A writer of one run's frames, the first after `after` (none: from the first). */
  writer(reply: FastifyReply, after?: number): SseWriter {
    return new SseWriter(this.connection(reply), after);
  }

  /**
   * Streams with `share` (the reader's place, FairShares) held until the socket closes; released at
   * once when `open` fails, as nothing is streamed then.
   */
  async holding(reply: FastifyReply, share: () => void, open: () => Promise<void>): Promise<void> {
    reply.raw.once('close', share);
    try {
      await open();
    } catch (err) {
      share();
      throw err;
    }
  }
}
