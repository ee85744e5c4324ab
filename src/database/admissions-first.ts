import { Injectable } from '@nestjs/common';

/** How long a statement that can wait is held back for admissions, at most: a steady stream of claims never starves it. */
export const ADMISSIONS_FIRST_MAX_WAIT_MS = 200;

/**
 * Admissions come first on the database. A run's claim is what its `RUN_STARTED`, and so its first
 * content, waits for; a run's end or a write of its event log can wait a little. The pool serves
 * statements in the order they are sent, so under a burst the claims of new runs queued behind the
 * ends of the runs admitted just before (100 runs at once: 3 statements each, 10 connections, a
 * claim waited behind about 40 others). Statements that can wait call {@link turn} first: it resolves
 * when no claim is in flight, or after {@link ADMISSIONS_FIRST_MAX_WAIT_MS} at the latest.
 */
@Injectable()
export class AdmissionsFirst {
  private inFlight = 0;
  private waiting: Array<() => void> = [];
  private deadline: NodeJS.Timeout | undefined;

  /** Runs a claim: statements that can wait are held back until it is answered. */
  async admission<T>(claim: () => Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      return await claim();
    } finally {
      if (--this.inFlight === 0) this.releaseAll();
    }
  }

  /** Resolves when a statement that can wait may be sent (undefined when it may be sent at once). */
  turn(): Promise<void> | undefined {
    if (this.inFlight === 0) return undefined;
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.deadline ??= setTimeout(() => {
        this.deadline = undefined;
        this.releaseAll();
      }, ADMISSIONS_FIRST_MAX_WAIT_MS).unref();
    });
  }

  private releaseAll(): void {
    clearTimeout(this.deadline);
    this.deadline = undefined;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}
