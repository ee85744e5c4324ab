import { Injectable, Logger } from '@nestjs/common';
import { HandedOverRun, LapsedRunsRepository } from '../storage/lapsed-runs.repository';
import { RunStreams } from '../stream/run-streams.service';

/**
 * Parks a run whose frontend wait outlasted RUN_PARK_AFTER_MS (docs/durable-runs.md): its engine
 * stopped here, it waits in storage for its tool result, and a posted result wakes it on whichever
 * replica the result reaches.
 */
@Injectable()
export class RunParking {
  private readonly log = new Logger(RunParking.name);

  constructor(
    private readonly streams: RunStreams,
    private readonly lapsed: LapsedRunsRepository,
  ) {}

  park(run: HandedOverRun, toolCallId: string, remainingMs: number): void {
    // Not parked: its lease lapses, and the reaper continues it (the step runs again).
    void this.parkNow(run, toolCallId, remainingMs).catch((err: Error) =>
      this.log.warn(`run ${run.id}: parking failed: ${err.message}`),
    );
  }

  private async parkNow(run: HandedOverRun, toolCallId: string, remainingMs: number): Promise<void> {
    // Its readers here follow storage; what its log framed is stored before the run is parked.
    this.streams.handOver(run.id);
    await this.streams.flush();
    if (await this.lapsed.park(run, toolCallId, remainingMs))
      this.log.log(`run ${run.id}: parked, waiting for the result of tool call ${toolCallId}`);
  }
}
