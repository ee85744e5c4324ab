import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DrainState } from '../ops/drain.service';
import { RunHandOver } from './durable/run-hand-over';
import { LiveRuns } from './engine/live-runs';
import { RunStreams } from './stream/run-streams.service';
import { ThreadStreams } from './stream/thread-streams.service';

/** How a relayed stream ends when this replica must go: for that connection only (no `id:`), not in the run's log. */
const runMoved = () =>
  `data: ${JSON.stringify({
    type: 'RUN_ERROR',
    timestamp: Date.now(),
    message: 'This replica is shutting down; the run goes on elsewhere: rejoin it at GET /runs/:runId/events',
    code: 'RUN_MOVED',
  })}\n\n`;

/**
 * SIGTERM: readiness goes red and new runs are refused; live runs are handed over to the other
 * replicas at once (RunHandOver), and this replica relays their events to its clients, for up
 * to `SHUTDOWN_GRACE_MS`; streams still open then end with RUN_ERROR RUN_MOVED (their clients rejoin
 * elsewhere). Without a hand-over (SIGINT, a developer's Ctrl-C) runs get that long to finish, and
 * the rest end with RUN_ERROR SHUTTING_DOWN after closing what is open, and are recorded.
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
    private readonly runHandOver: RunHandOver,
  ) {}

  private async handOver(): Promise<void> {
    if (!this.runs.count) return;
    try {
      await this.runHandOver.handOverAll();
    } catch (err) {
      // Their leases lapse by themselves: the others continue them a lease later.
      this.log.warn(`handing runs over failed: ${(err as Error).message}`);
    }
  }

  async drainRuns(handOver: boolean): Promise<void> {
    this.drain.begin();
    // Streams following runs of other instances end now: their clients rejoin on another instance.
    this.streams.closeFollowers();
    this.threadStreams.closeFollowers();
    const deadline = Date.now() + this.config.shutdownGraceMs;
    this.log.log(`draining: ${this.runs.count} active run(s), up to ${this.config.shutdownGraceMs} ms`);
    if (handOver) await this.handOver();
    while ((this.runs.count || this.streams.relaying) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      // A run this replica was taking on when the drain began (a continuation) goes too.
      if (handOver) await this.handOver();
    }
    if (this.streams.relaying) {
      this.log.log(`ending ${this.streams.relaying} relayed stream(s) with RUN_MOVED`);
      this.streams.endRelays(runMoved());
    }
    if (this.runs.count) {
      this.log.warn(`ending ${this.runs.count} run(s) with SHUTTING_DOWN`);
      await this.runs.stopAll('SHUTTING_DOWN', 'The service is shutting down', 5000);
    }
  }
}
