import { Observable, Observer, OperatorFunction, Subscribable, Subscriber, Unsubscribable } from 'rxjs';
import { AguiEvent, RunErrorCode, UpstreamEvent } from '../../protocol/agui-events';
import type { RunFinishedOutcome } from '../../protocol/outcomes';
import type { TokenUsage } from '../../protocol/usage';
import { Outcome, Translation } from './mastra-to-agui';
import { LifecycleOptions, RunLifecycle } from './run-lifecycle';

/** Why the upstream stopped: the outcome its translation gave, if any; the error it failed with, if it did. */
export type Stopped = { outcome?: Outcome; failure?: unknown };

/**
 * How the run ends: RUN_FINISHED (with its result and AG-UI 1.0 outcome, if any), or RUN_ERROR; a
 * stop (`code`) with an `outcome` goes out as RUN_FINISHED with it (a cancelled AG-UI 1.x run).
 */
export type Terminal = (
  | { result?: unknown; outcome?: RunFinishedOutcome }
  | { code: RunErrorCode; message: string; outcome?: RunFinishedOutcome }
) & {
  /** AG-UI 1.0 `usage`, for a request that declared 1.x. */
  usage?: TokenUsage[];
};

/** A tool call's result known before the engine reports it (the tool reported it itself). */
export type ReportedResult = { toolCallId: string; content: unknown };

export type GuardOptions = Omit<LifecycleOptions, 'emit'> & {
  /** Tool calls of earlier runs whose results this run sends (resumed approvals). */
  adopted?: string[];
  /** Each goes out right after its call's TOOL_CALL_END (at once when that is out already). */
  results?: Subscribable<ReportedResult>;
  /**
   * Decides how the run ends once the upstream stopped, and records it: the terminal event waits for
   * it. `closeOpen` closes what is open (call it first when the run fails, so what is recorded is
   * what was shown). A rejection ends the run with RUN_ERROR INTERNAL.
   */
  end: (stopped: Stopped, closeOpen: () => void) => Promise<Terminal>;
};

/**
 * RunLifecycle as an operator on the translated stream: RUN_STARTED as soon as it is subscribed (before
 * the upstream is; none when the log has it, `started`), the upstream's events as the guard lets them
 * through, then, once the upstream completes or fails, the terminal event `end` decides; then it
 * completes. It never errors.
 */
export function guardLifecycle(options: GuardOptions): OperatorFunction<Translation, AguiEvent> {
  return (translations) =>
    new Observable<AguiEvent>((subscriber) => {
      const guard = new LifecycleGuard(options, subscriber);
      guard.upstream = translations.subscribe(guard);
      return guard;
    });
}

/**
 * One subscription of guardLifecycle(): the observer of the translations and the teardown of the
 * subscription. An object rather than closures: it is held as long as the run streams, and closures
 * made in the operator would keep its whole upstream chain (and what the engine call was given) too.
 */
class LifecycleGuard implements Observer<Translation> {
  upstream: Unsubscribable | undefined;
  private readonly lifecycle: RunLifecycle;
  private readonly end: GuardOptions['end'];
  private readonly reported: Unsubscribable | undefined;
  /** Results reported before their TOOL_CALL_END went out; sent right after it (made on first use). */
  private held: Map<string, unknown> | undefined;
  private outcome: Outcome | undefined;

  constructor(
    { results, end, adopted, ...rest }: GuardOptions,
    private readonly subscriber: Subscriber<AguiEvent>,
  ) {
    this.end = end;
    this.lifecycle = new RunLifecycle({ ...rest, emit: (event) => subscriber.next(event) });
    this.lifecycle.start();
    if (adopted?.length) this.lifecycle.adopt(adopted);
    this.reported = results?.subscribe({ next: (result) => this.report(result) });
  }

  next(translation: Translation): void {
    for (const event of translation.events) this.push(event);
    this.outcome ??= translation.outcome;
  }

  error(failure: unknown): void {
    this.stop({ outcome: this.outcome, failure });
  }

  complete(): void {
    this.stop(this.outcome ? { outcome: this.outcome } : {});
  }

  /** The subscription's teardown. */
  unsubscribe(): void {
    this.upstream?.unsubscribe();
    this.reported?.unsubscribe();
  }

  private report({ toolCallId, content }: ReportedResult): void {
    if (this.lifecycle.toolCallEnded(toolCallId))
      this.push({ type: 'TOOL_CALL_RESULT', toolCallId, content });
    else (this.held ??= new Map()).set(toolCallId, content);
  }

  private push(event: UpstreamEvent): void {
    this.lifecycle.push(event);
    const held = this.held;
    if (event.type === 'TOOL_CALL_END' && event.toolCallId && held?.has(event.toolCallId)) {
      const content = held.get(event.toolCallId);
      held.delete(event.toolCallId);
      this.lifecycle.push({ type: 'TOOL_CALL_RESULT', toolCallId: event.toolCallId, content });
    }
  }

  private stop(stopped: Stopped): void {
    this.reported?.unsubscribe();
    const lifecycle = this.lifecycle;
    void this.end(stopped, () => lifecycle.closeOpen())
      .catch((): Terminal => ({ code: 'INTERNAL', message: 'The run failed unexpectedly' }))
      .then((terminal) => {
        if ('code' in terminal && !terminal.outcome)
          lifecycle.fail(terminal.code, terminal.message, terminal.usage);
        else
          lifecycle.finish(
            'result' in terminal ? terminal.result : undefined,
            terminal.outcome,
            terminal.usage,
          );
        this.subscriber.complete();
      });
  }
}
