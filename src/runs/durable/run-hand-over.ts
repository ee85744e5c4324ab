import { Injectable, Logger } from '@nestjs/common';
import { LiveRuns } from '../engine/live-runs';
import { LapsedRunsRepository } from '../storage/lapsed-runs.repository';
import { RunStreams } from '../stream/run-streams.service';

/** The drain's side of durable runs (docs/durable-runs.md#drain-handing-runs-over): this replica's runs handed over. */
@Injectable()
export class RunHandOver {
  private readonly log = new Logger(RunHandOver.name);

  constructor(
    private readonly live: LiveRuns,
    private readonly streams: RunStreams,
    private readonly lapsed: LapsedRunsRepository,
  ) {}

  /**
   * Hands every run of this replica that is not ending over to the others (SIGTERM): their engines
   * stop without an end, their logs are stored, their leases lapse now, and the others are told.
   * Their readers here follow the log (RunStreams relays). Returns how many were handed over.
   */
  async handOverAll(): Promise<number> {
    const handed = this.live.handOverAll();
    if (!handed.length) return 0;
    for (const run of handed) this.streams.handOver(run.id);
    await this.streams.flush();
    const ids = await this.lapsed.handOver(handed);
    this.log.log(`handed ${ids.length} run(s) over to the other replicas`);
    return ids.length;
  }
}
