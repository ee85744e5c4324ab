import { Injectable } from '@nestjs/common';
import { RunErrorCode } from './agui-events';

/** A run streaming on this instance, as shutdown sees it. */
export type LiveRun = { readonly threadId: string; stop(code: RunErrorCode, message: string): void };

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
   * Whether a run of `threadId` held here ended within `timeoutMs` (false at once when none is held
   * here). Stop-then-send: the next request of a client that just aborted can arrive before its old
   * run heard the disconnect; that run ends within milliseconds of hearing it.
   */
  async ended(threadId: string, timeoutMs: number): Promise<boolean> {
    if (![...this.runs].some((run) => run.threadId === threadId)) return false;
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

  /** Ends every run with RUN_ERROR `code` (graceful shutdown); resolves when all are recorded, or at the timeout. */
  async stopAll(code: RunErrorCode, message: string, timeoutMs: number): Promise<void> {
    for (const run of this.runs) run.stop(code, message);
    const deadline = Date.now() + timeoutMs;
    while (this.runs.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
}
