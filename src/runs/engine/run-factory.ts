import { Inject, Injectable, Logger } from '@nestjs/common';
import { concat, defer, from, mergeMap, Observable, Observer, Subscribable } from 'rxjs';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { Metrics } from '../../ops/metrics.service';
import { AguiEvent } from '../../protocol/agui-events';
import { StoredMessage } from '../../threads/message-format';
import { guardLifecycle } from '../events/lifecycle-guard';
import { translate } from '../events/mastra-to-agui';
import type { PreparedRun } from '../prepare/run-preparer';
import { agentOf } from '../prepare/agent-call';
import type { AnsweredInterrupt } from '../storage/interrupts.repository';
import { ToolCallsRepository } from '../storage/tool-calls.repository';
import type { LogReader } from '../stream/run-log';
import { FrontendToolResults } from '../tools/frontend-tool-results';
import { screenToolCalls } from '../tools/screen-tool-calls';
import { RunToolCalls } from '../tools/run-tool-calls';
import { FrontendWaitLimits, FrontendWaits } from './frontend-waits';
import { LiveRuns } from './live-runs';
import { MastraRunner } from './mastra-runner';
import { RunCancels } from './run-cancels';
import { EarlierSteps, RunExecution } from './run-execution';
import { RunLeases } from './run-leases';
import { RunParking } from './run-parking';
import { RunRecorder } from './run-record';
import { RunSubscription } from './run-subscription';
import { RunTelemetry } from './run-telemetry';

/** A run made by the factory: its events for one reader, and the run itself. */
export type MadeRun = { execution: RunExecution; events$: Subscribable<AguiEvent> };

/**
 * Makes runs: a claimed run (RunsService) or one continued here after another replica lost it
 * (RunContinuations) gets its parts and its event stream here, the one place that knows both.
 */
@Injectable()
export class RunFactory {
  private readonly log = new Logger(RunFactory.name);
  private readonly limits: FrontendWaitLimits;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly runner: MastraRunner,
    private readonly live: LiveRuns,
    private readonly leases: RunLeases,
    private readonly cancels: RunCancels,
    private readonly results: FrontendToolResults,
    private readonly toolCalls: ToolCallsRepository,
    private readonly recorder: RunRecorder,
    private readonly metrics: Metrics,
    private readonly parking: RunParking,
  ) {
    this.limits = { timeoutMs: config.frontendToolTimeoutMs, parkAfterMs: config.runParkAfterMs };
  }

  /**
   * A claimed run: `history` is what the model sees, `resumed` the approvals its `resume` answered.
   * `share` is released once its end is recorded.
   */
  make(
    prepared: PreparedRun,
    history: StoredMessage[],
    resumed: AnsweredInterrupt[],
    share: () => void,
  ): MadeRun {
    const execution = this.execution(prepared, history, resumed);
    return { execution, events$: this.events$(execution, share) };
  }

  /**
   * A lapsed run this replica claimed (RunContinuations): it goes on from the steps an earlier
   * replica completed (`earlier`, also in `history`), its steps named after `stepsBefore`; the
   * approvals its `resume` answered whose results no replica showed run (again) first.
   */
  continued(
    prepared: PreparedRun,
    history: StoredMessage[],
    earlier: EarlierSteps,
    stepsBefore: number,
    resumed: AnsweredInterrupt[] = [],
  ): Subscribable<AguiEvent> {
    const execution = this.execution(prepared, history, resumed, earlier);
    return this.events$(execution, () => undefined, stepsBefore);
  }

  private execution(
    prepared: PreparedRun,
    history: StoredMessage[],
    resumed: AnsweredInterrupt[],
    earlier?: EarlierSteps,
  ): RunExecution {
    return new RunExecution(
      prepared,
      {
        tools: new RunToolCalls(prepared, this.toolCalls),
        waitsFor: (run) => new FrontendWaits(run, this.results, this.metrics, this.limits),
        telemetry: new RunTelemetry(prepared, this.metrics),
        leases: this.leases,
        cancels: this.cancels,
        recorder: this.recorder,
        log: this.log,
      },
      history,
      resumed,
      earlier,
    );
  }

  /**
   * The run's events for one reader (its RunLog): subscribing starts the run. Never errors: every
   * failure becomes RUN_ERROR, after which it completes. Unsubscribing stops the run (CANCELLED).
   * A continued run (another replica's, whose log goes on here) names its steps after the
   * `stepsBefore` its log shows.
   */
  private events$(run: RunExecution, share: () => void, stepsBefore?: number): Subscribable<AguiEvent> {
    return {
      subscribe: (reader: Partial<Observer<AguiEvent>> & Partial<Pick<LogReader, 'tail'>>) => {
        // The run's end stores what its log has not (RunLogWriter.tail).
        if (reader.tail) run.logTail = () => reader.tail!();
        run.start();
        const subscription = new RunSubscription(run, reader, this.live, share);
        this.live.add(subscription);
        // Not the reader's subscription: a run whose reader left still records its end.
        subscription.pipeline = this.pipeline(run, stepsBefore).subscribe(subscription);
        run.onPark = (toolCallId, remainingMs) => {
          const handed = subscription.handOver();
          if (handed) this.parking.park(handed, toolCallId, remainingMs);
        };
        return subscription;
      },
    };
  }

  /**
   * One run's events (RUN_STARTED is in its log already): its chunks translated and guarded, then
   * the terminal event once the end is recorded. The engine starts as soon as it is subscribed.
   */
  private pipeline(run: RunExecution, stepsBefore?: number): Observable<AguiEvent> {
    const { threadId, runId } = run.prepared;
    const engine = () => {
      const { messages, call } = run.agentCall();
      return this.runner.stream(agentOf(run.prepared), messages, call);
    };
    // A resumed run first shows the results of the approvals it answers; the model sees them after their calls.
    const source = run.resumed.length
      ? concat(from(run.resumedResults()).pipe(mergeMap((chunks) => from(chunks))), defer(engine))
      : engine();
    return run.inSpan(source).pipe(
      screenToolCalls(run.tools),
      translate(undefined, stepsBefore),
      guardLifecycle({
        threadId,
        runId,
        // Its log has RUN_STARTED already: the claim stored it, or the replica it continues.
        started: true,
        adopted: run.resumed.map((r) => r.toolCallId),
        results: run.results,
        warn: (message) => this.log.warn(`run ${runId}: ${message}`),
        end: (stopped, closeOpen) =>
          run.end(stopped, closeOpen).catch((err: unknown) => {
            // The guard still ends the stream (RUN_ERROR INTERNAL); the cause is for the log only.
            this.log.error(err instanceof Error ? (err.stack ?? err.message) : 'run failed', `run ${runId}`);
            throw err;
          }),
      }),
    );
  }
}
