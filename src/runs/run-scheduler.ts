import { AsyncResource } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';

/**
 * Runs queued functions in order, one per event-loop turn. While `busy()` says requests are being
 * admitted, a function waits, but never longer than `maxWaitMs` after it was queued: a burst of
 * requests gets its RUN_STARTED events out first, and under sustained load every engine still
 * starts within `maxWaitMs`.
 */
export class TurnQueue {
  private readonly queue: Array<{ fn: () => void; at: number }> = [];
  private scheduled = false;

  constructor(
    private readonly busy: () => boolean,
    private readonly maxWaitMs = 100,
  ) {}

  push(fn: () => void): void {
    // Each function runs in the async context it was queued from (its request's log fields).
    this.queue.push({ fn: AsyncResource.bind(fn), at: Date.now() });
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => this.runOne());
  }

  private runOne(): void {
    const waited = Date.now() - this.queue[0].at;
    if (this.busy() && waited < this.maxWaitMs) {
      setTimeout(() => this.runOne(), 1);
      return;
    }
    this.scheduled = false;
    this.queue.shift()!.fn();
    this.schedule();
  }
}

/** When the engines of this instance's runs start, given the requests being admitted. */
@Injectable()
export class RunScheduler {
  /** Requests between their arrival and their RUN_STARTED. */
  private admitting = 0;
  private readonly engineStarts = new TurnQueue(() => this.admitting > 0);

  /** Counts one request as being admitted until the returned function is called (once is enough). */
  admit(): () => void {
    this.admitting++;
    let done = false;
    return () => {
      if (!done) this.admitting--;
      done = true;
    };
  }

  /** Emits once, when the engine of a run whose RUN_STARTED is out may start, then completes. */
  engineStart(): Observable<void> {
    return new Observable<void>((subscriber) => {
      this.engineStarts.push(() => {
        subscriber.next();
        subscriber.complete();
      });
    });
  }
}
