import { Injectable } from '@nestjs/common';
import { RunErrorCode } from '../../protocol/agui-events';
import type { HandedOverRun } from '../storage/lapsed-runs.repository';

/** A run streaming on this instance, as shutdown sees it. */
export type LiveRun = {
  readonly threadId: string;
  /** Told to stop (its client left, cancel, shutdown), its end not recorded yet. */
  readonly stopping: boolean;
  stop(code: RunErrorCode, message: string): void;
  /** Stops it here without an end, for another replica to continue; undefined when it is ending anyway. */
  handOver(): HandedOverRun | undefined;
};

/** How long a run of a busy thread has to be heard stopping: a client's disconnect arrives within it. */
const NOTICE_MS = 100;

/** The runs streaming on this instance, from their first event to the recording of their end. */
@Injectable()
export class LiveRuns {
  private readonly runs = new Set<LiveRun>();
  /** Who waits for a thread's run here to be recorded ended (a next run claiming the thread). */
  private readonly waiting = new Map<string, Set<() => void>>();

  add(run: LiveRun): void {
    this.runs.add(run);
  }

  delete(run: LiveRun): void {
    if (!this.runs.delete(run)) return;
    const waiters = this.waiting.get(run.threadId);
    if (!waiters) return;
    this.waiting.delete(run.threadId);
    waiters.forEach((wake) => wake());
  }

  /**
   * Whether the run of `threadId` held here stopped and ended within `timeoutMs` (false when none is
   * held here, or it is not stopping: the thread is busy). Stop-then-send: the next request of a
   * client that just aborted can arrive before its old run heard the disconnect (allowed NOTICE_MS);
   * that run ends within milliseconds of hearing it.
   */
  async ended(threadId: string, timeoutMs: number): Promise<boolean> {
    const run = [...this.runs].find((r) => r.threadId === threadId);
    if (!run) return false;
    for (let waited = 0; !run.stopping && waited < NOTICE_MS; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (!this.runs.has(run)) return true;
    if (!run.stopping) return false;
    return new Promise<boolean>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiting.get(threadId)?.delete(wake);
        resolve(false);
      }, timeoutMs);
      let waiters = this.waiting.get(threadId);
      if (!waiters) this.waiting.set(threadId, (waiters = new Set()));
      waiters.add(wake);
    });
  }

  get count(): number {
    return this.runs.size;
  }

  /** Stops every run that is not ending here without an end (a drain hands them over); returns them. */
  handOverAll(): HandedOverRun[] {
    return [...this.runs].flatMap((run) => run.handOver() ?? []);
  }

  /** Ends every run with RUN_ERROR `code` (graceful shutdown); resolves when all are recorded, or at the timeout. */
  async stopAll(code: RunErrorCode, message: string, timeoutMs: number): Promise<void> {
    for (const run of this.runs) run.stop(code, message);
    const deadline = Date.now() + timeoutMs;
    while (this.runs.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
