import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DrainState } from '../ops/drain.service';
import { LiveRuns } from './engine/live-runs';
import { RunStreams } from './stream/run-streams.service';
import { ThreadStreams } from './stream/thread-streams.service';

/**
 * SIGTERM: readiness goes red and new runs are refused; active runs get `SHUTDOWN_GRACE_MS` to
 * finish; the rest end with RUN_ERROR SHUTTING_DOWN after closing what is open, and are recorded.
 */
@Injectable()
export class GracefulShutdown {
  private readonly log = new Logger(GracefulShutdown.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly drain: DrainState,
    private readonly runs: LiveRuns,
    private readonly streams: RunStreams,
    private readonly threadStreams: ThreadStreams,
  ) {}

  async drainRuns(): Promise<void> {
    this.drain.begin();
    // Streams following runs of other instances end now: their clients rejoin on another instance.
    this.streams.closeFollowers();
    this.threadStreams.closeFollowers();
    const deadline = Date.now() + this.config.shutdownGraceMs;
    this.log.log(`draining: ${this.runs.count} active run(s), up to ${this.config.shutdownGraceMs} ms`);
    while (this.runs.count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (this.runs.count) {
      this.log.warn(`ending ${this.runs.count} run(s) with SHUTTING_DOWN`);
      await this.runs.stopAll('SHUTTING_DOWN', 'The service is shutting down', 5000);
    }
  }
}
