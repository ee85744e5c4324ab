import type { Logger } from '@nestjs/common';
import { Observable, Subscribable } from 'rxjs';
import { RunToolContext, ToolResult } from '../../agents/tools/run-tools';
import { AguiEvent, RunErrorCode, TERMINAL_TYPES } from '../../protocol/agui-events';
import { addUsage, spentSoFar, TokenUsage, tokensOf } from '../../protocol/usage';
import type { ModelCallObserver } from '../../agents/model-calls';
import { MessageCollector } from '../../threads/message-collector';
import { StoredMessage } from '../../threads/message-format';
import { placeMessages } from '../../threads/mastra-rows';
import type { AnsweredInterrupt } from '../storage/interrupts.repository';
import { resumedResults } from '../tools/resumed-approvals';
import type { RunToolCalls } from '../tools/run-tool-calls';
import { MastraChunk } from '../events/mastra-to-agui';
import type { AgentCall } from '../prepare/agent-call';
import { agentCallOf } from '../prepare/agent-call';
import { DATABASE_UNAVAILABLE, decideEnding, Ending, StopReason } from './run-ending';
import type { RunRecorder } from './run-record';
import type { RunCancels } from './run-cancels';
import type { FrontendWaits, WaitingRun } from './frontend-waits';
import type { RunTelemetry } from './run-telemetry';
import type { Checkpoint, LeaseHolder, RunLeases } from './run-leases';
import type { HandedOverRun } from '../storage/lapsed-runs.repository';
import { ReportedResult, Stopped, Terminal } from '../events/lifecycle-guard';
import { PreparedRun } from '../prepare/run-preparer';
import type { LogTail } from '../storage/run-events.repository';

export type { PreparedRun };

/** The parts of one run, built for it by RunFactory: each does one job. */
export type RunParts = {
  /** The model's tool calls in this run and what became of them. */
  tools: RunToolCalls;
  /** The run's frontend waits, made for the run itself (they stop and park it). */
  waitsFor: (run: WaitingRun) => FrontendWaits;
  telemetry: RunTelemetry;
  leases: RunLeases;
  cancels: RunCancels;
  recorder: RunRecorder;
  log: Logger;
};

/** What a continued run takes over from the steps earlier replicas completed: their messages and their tokens. */
export type EarlierSteps = { messages: StoredMessage[]; usage?: TokenUsage[] };

/**
 * One run on this instance, as far as it is more than its event stream: its stop signal, what its
 * tools report (results as soon as they exist, frontend waits), what it showed (the lease's
 * checkpoints, the stored messages), and its end, recorded before the terminal event goes out.
 * RunFactory composes its stream: MastraRunner → screenToolCalls() → translate() → guardLifecycle().
 */
export class RunExecution implements RunToolContext, LeaseHolder, ModelCallObserver {
  private readonly abort = new AbortController();
  /** Its lease could not be renewed in time: the run ends without waiting for its end write. */
  private leaseMayLapse = false;
  private readonly collector = new MessageCollector();
  /** Events shown so far: the lease checkpoints what the client saw when this moves. */
  private shown = 0;
  private terminalShown = false;
  private titleWanted = false;
  /** The tokens its model calls reported, one entry per provider and model (made on first use). */
  private usage: TokenUsage[] | undefined;
  /**
   * The events its log framed and did not store yet (set by the pipeline when its reader is a log):
   * the end stores them in the statement that records it, so a run recorded ended has all it
   * showed in its log.
   */
  logTail: (() => Promise<LogTail | undefined>) | undefined;
  /** Parks the run (its reader tears it down here): set by the pipeline when parking is on. */
  onPark: ((toolCallId: string, remainingMs: number) => void) | undefined;
  /** The steps completed so far and the messages up to the last one's end (made on the first). */
  private steps: Checkpoint['steps'];
  private readonly waits: FrontendWaits;

  /**
   * `history` is what the model sees (stored history, then the incoming messages): handed to the
   * engine once, by agentCall(), and not kept after.
   */
  constructor(
    readonly prepared: PreparedRun,
    private readonly parts: RunParts,
    private history: StoredMessage[] = [],
    /** Approvals answered by this run's `resume`: their calls run (or are declined) before the model goes on. */
    readonly resumed: AnsweredInterrupt[] = [],
    /** A continued run: what the steps an earlier replica completed showed (stored with its own) and spent. */
    private readonly carried: EarlierSteps = { messages: [] },
  ) {
    if (carried.usage?.length) this.usage = carried.usage.map((u) => ({ ...u }));
    this.waits = parts.waitsFor(this);
  }

  /** The model's tool calls in this run and what became of them. */
  get tools(): RunToolCalls {
    return this.parts.tools;
  }

  get threadId(): string {
    return this.prepared.threadId;
  }

  /** Whether the run belongs to its thread (a stateless run merely shares the thread's id). */
  get ofThread(): boolean {
    return !this.prepared.stateless;
  }

  /** Whether what the run produces goes into its thread. */
  private get stores(): boolean {
    return !this.prepared.readOnly && !this.prepared.stateless;
  }

  /** Whether start() held it. */
  get started(): boolean {
    return this.parts.telemetry.started;
  }

  /** Whether it was told to stop (its end may not be recorded yet). */
  get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  /** Whether its terminal event went out. */
  get ended(): boolean {
    return this.terminalShown;
  }

  get runId(): string {
    return this.prepared.runId;
  }

  get resourceId(): string {
    return this.prepared.principal.resourceId;
  }

  get attempt(): number {
    return this.prepared.attempt;
  }

  /** Events shown so far (the lease's checkpoints follow it). */
  get shownCount(): number {
    return this.shown;
  }

  /** Aborted when the run stops; MastraRunner aborts the provider call with it. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** ModelCallObserver: the retries the run asked for (`modelSettings.maxRetries`), else the configured ones. */
  get modelRetries(): number | undefined {
    return this.prepared.modelSettings.maxRetries;
  }

  /** ModelCallObserver: one provider call's tokens. */
  recordUsage(usage: TokenUsage): void {
    addUsage((this.usage ??= []), usage);
    const budget = this.prepared.budget;
    // A step boundary: the run that crossed its owner's budget goes no further than this step.
    if (budget && budget.spent + tokensOf(this.usage) >= budget.tokens)
      this.stop('QUOTA_EXCEEDED', `The token budget of this owner (${budget.tokens} tokens) is spent`);
  }

  /** Tool results reported by the tools themselves, for the guard to place after their TOOL_CALL_END. */
  get results(): Subscribable<ReportedResult> {
    return this.tools.results;
  }

  /**
   * Holds the run on this instance (lease, cancel route, metrics); the stream starts on subscription.
   * The run is its own lease holder and cancel target: no closures kept per run for them.
   */
  start(): void {
    this.parts.telemetry.start();
    this.parts.cancels.track(this.runId, this);
    this.parts.leases.hold(this.runId, this);
  }

  /** LeaseHolder: another instance ended the run (its lease lapsed meanwhile). */
  leaseLost(): void {
    this.stop('INTERRUPTED', 'The run was interrupted; please retry');
  }

  /** LeaseHolder: the lease could not be renewed in time and may lapse. */
  leaseUnrenewable(): void {
    this.leaseMayLapse = true;
    this.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
  }

  /** LeaseHolder: what to keep if this instance dies now, and what to continue from elsewhere. */
  checkpoint(): Checkpoint {
    return {
      messages: this.stores
        ? placeMessages(this.prepared.threadId, this.produced(this.collector.openTextIds()))
        : undefined,
      steps: this.steps,
    };
  }

  /** What the run produced, the carried steps first; text cut short (`cut`) says so. */
  private produced(cut?: ReadonlySet<string>): StoredMessage[] {
    const own = this.collector.produced(cut);
    return this.carried.messages.length ? [...this.carried.messages, ...own] : own;
  }

  /**
   * Handed over to another replica (this one drains): stops here without recording an end (the
   * caller tore its stream down); returns what the other replica continues from.
   */
  handOver(): HandedOverRun {
    this.parts.cancels.untrack(this.runId);
    this.tools.results.complete();
    this.parts.leases.release(this.runId, this);
    this.stop('CANCELLED', 'Handed over to another replica');
    this.parts.telemetry.handedOver();
    const { messages, steps } = this.checkpoint();
    return {
      id: this.runId,
      resourceId: this.resourceId,
      attempt: this.attempt,
      messages,
      ...(steps ? { progress: steps.messages, ...spentSoFar(steps.usage) } : {}),
      shown: this.produced(),
      shownUsage: this.usage,
    };
  }

  stop(code: RunErrorCode, message: string): void {
    if (!this.abort.signal.aborted) this.abort.abort(new StopReason(code, message));
  }

  /** The run's agent call (agentCallOf), its history given up here. */
  agentCall(): { messages: unknown; call: AgentCall } {
    const history = this.history;
    this.history = [];
    return agentCallOf(
      this.prepared,
      history,
      this,
      this.abort.signal,
      this.parts.log,
      this.parts.telemetry.current,
    );
  }

  /** `source` subscribed with the run's span current: model and tool calls nest under it. */
  inSpan<T>(source: Observable<T>): Observable<T> {
    return this.parts.telemetry.inSpan(source);
  }

  /**
   * The results of the approvals this run's `resume` answered, as the engine would report them;
   * each joins the history the model sees.
   */
  resumedResults(): Promise<MastraChunk[]> {
    return resumedResults(this.prepared, this.resumed, this.history, this.signal);
  }

  /**
   * Counts and collects an event the client is shown (before it goes out); after RUN_FINISHED, names
   * the thread if asked to.
   */
  observe(event: AguiEvent): void {
    this.collector.observe(event);
    this.tools.shown(event);
    if (event.type === 'TOOL_CALL_END') this.waits.endShown(event.toolCallId);
    this.shown++;
    // A step completed: another replica would continue from here (the lease's next checkpoint keeps it).
    if (event.type === 'STEP_FINISHED')
      this.steps = {
        count: (this.steps?.count ?? 0) + 1,
        messages: this.produced(),
        usage: this.usage?.map((u) => ({ ...u })),
      };
    if (!TERMINAL_TYPES.has(event.type)) return;
    this.terminalShown = true;
    if (this.titleWanted && event.type === 'RUN_FINISHED')
      this.parts.recorder.title(this.prepared, this.usage);
  }

  reportResult(toolCallId: string, content: unknown): void {
    this.tools.report({ toolCallId, content });
  }

  waitForFrontendResult(toolCallId: string): Promise<ToolResult> {
    return this.waits.wait(toolCallId, this.abort.signal);
  }

  /**
   * The guard's `end`: decides how the run ends now that its stream stopped, records it (with the
   * messages the client was shown) and returns the terminal event's content.
   */
  async end({ outcome, failure }: Stopped, closeOpen: () => void): Promise<Terminal> {
    this.parts.cancels.untrack(this.runId);
    this.tools.results.complete();
    const ending = decideEnding(
      {
        run: this.prepared,
        signal: this.abort.signal,
        log: this.parts.log,
        unanswered: () => this.tools.unanswered(),
      },
      outcome,
      failure,
    );
    // The ending is decided: a lease lost from now on changes nothing (and endRun then writes nothing).
    this.parts.leases.release(this.runId, this);
    let code: RunErrorCode | undefined;
    try {
      const terminal = await this.record(ending, closeOpen);
      code = 'code' in terminal ? terminal.code : undefined;
      return terminal;
    } finally {
      this.parts.telemetry.ended(ending.end, code, this.usage);
    }
  }

  /** Records the end (recordEnding): what was open is closed first when the run failed, text cut short marked so. */
  private async record(ending: Ending, closeOpen: () => void): Promise<Terminal> {
    const cut = ending.terminal ? this.collector.openTextIds() : new Set<string>();
    if (ending.terminal) closeOpen();
    // A database that may let the lease lapse is not waited on; the fence keeps the log whole then.
    const tail = this.leaseMayLapse ? undefined : await this.logTail?.();
    const terminal = await this.parts.recorder.record(ending, {
      run: this.prepared,
      attempt: this.attempt,
      usage: this.usage,
      produced: this.stores ? this.produced(cut) : [],
      leaseMayLapse: this.leaseMayLapse,
      tail,
    });
    if (!('code' in terminal)) this.titleWanted = this.prepared.generateTitle && this.stores;
    return terminal;
  }
}
