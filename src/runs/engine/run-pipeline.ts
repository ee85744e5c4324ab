import type { Logger } from '@nestjs/common';
import { concat, defer, from, mergeMap, Observable, Observer, Subscribable, Unsubscribable } from 'rxjs';
import { AguiEvent } from '../../protocol/agui-events';
import type { HandedRun } from '../durable/lapsed-runs';
import { ownToolCalls } from '../tools/own-tool-calls';
import { guardLifecycle } from './lifecycle-guard';
import type { LogReader } from '../stream/run-log';
import { LiveRun, LiveRuns } from './live-runs';
import { MastraRunner } from './mastra-runner';
import { translate } from './mastra-to-agui';
import { RunExecution } from './run-execution';

export type PipelineDeps = {
  runner: MastraRunner;
  live: LiveRuns;
  log: Logger;
  /** Parks a run whose engine stopped here (RUN_PARK_AFTER_MS): it waits in storage for its tool result. */
  park?: (run: HandedRun, toolCallId: string, remainingMs: number) => void;
};

/**
 * A continued run (another replica's, whose log goes on here): no RUN_STARTED (its log has one),
 * and its steps named after those its log shows.
 */
export type Continued = { stepsBefore: number };

/**
 * The run's events for one reader (its RunLog): subscribing starts the run. Never errors: every
 * failure becomes RUN_ERROR, after which it completes. Unsubscribing stops the run (CANCELLED).
 */
export function runEvents$(
  run: RunExecution,
  deps: PipelineDeps,
  share: () => void,
  continued?: Continued,
): Subscribable<AguiEvent> {
  return {
    subscribe: (reader: Partial<Observer<AguiEvent>> & Partial<Pick<LogReader, 'stored'>>) => {
      // The run records its end once its log has stored what it showed (RunLog.settled).
      if (reader.stored) run.logStored = () => reader.stored!();
      run.start();
      const reading = new RunReading(run, reader, deps.live, share);
      deps.live.add(reading);
      // Not the reader's subscription: a run whose reader left still records its end.
      reading.pipeline = pipeline(run, deps, continued).subscribe(reading);
      const park = deps.park;
      if (park)
        run.onPark = (toolCallId, remainingMs) => {
          const handed = reading.handOver();
          if (handed) park(handed, toolCallId, remainingMs);
        };
      return reading;
    },
  };
}

/**
 * One run's events: RUN_STARTED on subscription (the guard's), its chunks translated and guarded,
 * then the terminal event once the end is recorded. The engine starts right behind RUN_STARTED.
 */
function pipeline(run: RunExecution, deps: PipelineDeps, continued?: Continued): Observable<AguiEvent> {
  const { threadId, runId } = run.prepared;
  const engine = () => {
    const { messages, call } = run.agentCall();
    return deps.runner.stream(run.prepared.agent.agent, messages, call);
  };
  // A resumed run first shows the results of the approvals it answers; the model sees them after their calls.
  const source = run.resumed.length
    ? concat(from(run.resumedResults()).pipe(mergeMap((chunks) => from(chunks))), defer(engine))
    : engine();
  return run.inSpan(source).pipe(
    ownToolCalls(run.tools),
    translate(undefined, continued?.stepsBefore),
    guardLifecycle({
      threadId,
      runId,
      started: continued !== undefined,
      adopted: run.resumed.map((r) => r.toolCallId),
      results: run.results,
      warn: (message) => deps.log.warn(`run ${runId}: ${message}`),
      end: (stopped, closeOpen) =>
        run.end(stopped, closeOpen).catch((err: unknown) => {
          // The guard still ends the stream (RUN_ERROR INTERNAL); the cause is for the log only.
          deps.log.error(err instanceof Error ? (err.stack ?? err.message) : 'run failed', `run ${runId}`);
          throw err;
        }),
    }),
  );
}

/**
 * The reader of a run's events, as the run's pipeline sees it: each event is counted and collected
 * (RunExecution.observe) before the reader gets it. The reader's unsubscription stops the run
 * (CANCELLED) without tearing the pipeline down, so the run still records its end. One object, the
 * pipeline's only subscriber: not an Observable wrapped around it, which would add a subscription
 * per open run. It is also the run as shutdown sees it (LiveRun).
 */
class RunReading implements Observer<AguiEvent>, Unsubscribable, LiveRun {
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
  handOver(): HandedRun | undefined {
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
