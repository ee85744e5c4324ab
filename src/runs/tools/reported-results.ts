import type { Observer, Subscribable, Unsubscribable } from 'rxjs';
import type { ReportedResult } from '../events/lifecycle-guard';

/**
 * The results a run's tools report, for its one reader (the guard). Not a Subject: that would hold
 * an observers array, a subscriber and its finalizers per open run for what is one callback.
 */
export class ReportedResults implements Subscribable<ReportedResult>, Unsubscribable {
  private reader: Partial<Observer<ReportedResult>> | undefined;
  private done = false;

  subscribe(reader: Partial<Observer<ReportedResult>>): Unsubscribable {
    if (this.done) reader.complete?.();
    else this.reader = reader;
    return this;
  }

  /** The reader's unsubscription. */
  unsubscribe(): void {
    this.reader = undefined;
  }

  next(result: ReportedResult): void {
    if (!this.done) this.reader?.next?.(result);
  }

  complete(): void {
    if (this.done) return;
    this.done = true;
    this.reader?.complete?.();
    this.reader = undefined;
  }
}
