import { Observer, Unsubscribable } from 'rxjs';
import { AguiEvent } from '../../protocol/agui-events';
import type { HandedOverRun } from '../storage/lapsed-runs.repository';
import { LiveRun, LiveRuns } from './live-runs';
import { RunExecution } from './run-execution';

/**
 * The reader of a run's events, as the run's pipeline sees it: each event is counted and collected
 * (RunExecution.observe) before the reader gets it. The reader's unsubscription stops the run
 * (CANCELLED) without tearing the pipeline down, so the run still records its end. One object, the
 * pipeline's only subscriber: not an Observable wrapped around it, which would add a subscription
 * per open run. It is also the run as shutdown sees it (LiveRun).
 */
export class RunSubscription implements Observer<AguiEvent>, Unsubscribable, LiveRun {
  private closed = false;
  pipeline: Unsubscribable | undefined;

  constructor(
    private readonly run: RunExecution,
    private readonly reader: Partial<Observer<AguiEvent>>,
    private readonly live: LiveRuns,
    private readonly share: () => void,
  ) {}

  get threadId(): string {
    return this.run.threadId;
  }

  get stopping(): boolean {
    return this.run.stopping;
  }

  stop(...args: Parameters<RunExecution['stop']>): void {
    this.run.stop(...args);
  }

  /** Stops the run here without an end (its pipeline torn down), for another replica to continue it. */
  handOver(): HandedOverRun | undefined {
    if (this.closed || this.run.stopping || this.run.ended) return undefined;
    this.closed = true;
    this.pipeline?.unsubscribe();
    const handed = this.run.handOver();
    this.live.delete(this);
    this.share();
    return handed;
  }

  next(event: AguiEvent): void {
    this.run.observe(event);
    if (!this.closed) this.reader.next?.(event);
  }

  /** Never called (the pipeline never errors); passed on if it were. */
  error(err: unknown): void {
    this.live.delete(this);
    this.share();
    if (!this.closed) this.reader.error?.(err);
  }

  complete(): void {
    this.live.delete(this);
    this.share();
    if (!this.closed) this.reader.complete?.();
  }

  unsubscribe(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.run.ended) this.run.stop('CANCELLED', 'The client disconnected');
  }
}
