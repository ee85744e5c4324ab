import { Injectable } from '@nestjs/common';
import { RunErrorCode } from './agui-events';

/** A run streaming on this instance, as shutdown sees it. */
export type LiveRun = { stop(code: RunErrorCode, message: string): void };

/** The runs streaming on this instance, from their first event to the recording of their end. */
@Injectable()
export class LiveRuns {
  private readonly runs = new Set<LiveRun>();

  add(run: LiveRun): void {
    this.runs.add(run);
  }

  delete(run: LiveRun): void {
    this.runs.delete(run);
  }

  get count(): number {
    return this.runs.size;
  }

  /** Ends every run with RUN_ERROR `code` (graceful shutdown); resolves when all are recorded, or at the timeout. */
  async stopAll(code: RunErrorCode, message: string, timeoutMs: number): Promise<void> {
    for (const run of this.runs) run.stop(code, message);
    const deadline = Date.now() + timeoutMs;
    while (this.runs.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
