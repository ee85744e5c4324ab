import { Logger } from '@nestjs/common';
import { Observable, Subscribable } from 'rxjs';
import { Span, SpanKind } from '@opentelemetry/api';
import { RunToolContext, ToolResult } from '../../agents/tools/run-tools';
import { isDatabaseUnavailable } from '../../database/database-errors';
import { Metrics } from '../../ops/metrics.service';
import { ownerHash, startSpan, tracingOn, withSpan } from '../../ops/tracing';
import { AguiEvent, RunErrorCode, TERMINAL_TYPES } from '../../protocol/agui-events';
import { addUsage, spentSoFar, TokenUsage, tokensOf } from '../../protocol/usage';
import type { ModelCallObserver } from '../../agents/model-calls';
import { MessageCollector } from '../../threads/message-collector';
import { StoredMessage } from '../../threads/message-format';
import { ConversationStore } from '../storage/conversation.store';
import { AnsweredInterrupt, InterruptsRepository } from '../storage/interrupts.repository';
import { ToolCallsRepository } from '../storage/tool-calls.repository';
import { FrontendToolBroker } from '../tools/frontend-tools.broker';
import { resumedResults } from '../tools/resumed-approvals';
import { RunToolCalls } from '../tools/run-tool-calls';
import { MastraChunk } from './mastra-to-agui';
import { AgentCall } from './mastra-runner';
import { agentCallOf } from './agent-call';
import { DATABASE_UNAVAILABLE, decideEnding, Ending, endRunSpan, StopReason } from './run-ending';
import { recordEnding } from './run-record';
import { Checkpoint, LeaseHolder, RunLeases } from './run-leases';
import type { HandedRun } from '../durable/lapsed-runs';
import { ReportedResult, Stopped, Terminal } from './lifecycle-guard';
import { PreparedRun } from './run-preparer';
import { ParkCountdowns } from './park-countdowns';
import { generateTitle } from './thread-title';

export type { PreparedRun };

export type RunDeps = {
  conversations: ConversationStore;
  interrupts: InterruptsRepository;
  approvalTtlMs: number;
  leases: RunLeases;
  toolCalls: ToolCallsRepository;
  broker: FrontendToolBroker;
  frontendToolTimeoutMs: number;
  /** RUN_PARK_AFTER_MS: a frontend wait this long parks the run (0: never). */
  parkAfterMs: number;
  metrics: Metrics;
  log: Logger;
};

/** What a continued run takes over from the steps earlier replicas completed: their messages and their tokens. */
export type Carried = { messages: StoredMessage[]; usage?: TokenUsage[] };

/**
 * One run on this instance, as far as it is more than its event stream: its stop signal, what its
 * tools report (results as soon as they exist, frontend waits), what it showed (the lease's
 * checkpoints, the stored messages), and its end, recorded before the terminal event goes out.
 * RunsService composes its stream: MastraRunner → ownToolCalls() → translate() → guardLifecycle().
 */
export class RunExecution implements RunToolContext, LeaseHolder, ModelCallObserver {
  private readonly abort = new AbortController();
  /** Its lease could not be renewed in time: the run ends without waiting for its end write. */
  private leaseMayLapse = false;
  /** The model's tool calls in this run and what became of them. */
  readonly tools: RunToolCalls;
  private readonly collector = new MessageCollector();
  /** Events shown so far: the lease checkpoints what the client saw when this moves. */
  private shown = 0;
  private terminalShown = false;
  private titleWanted = false;
  /** When start() held the run (performance.now()), for its duration metric; 0 before. */
  private startedAt = 0;
  /** The run's span (a child of its request's), when tracing is on. */
  private span: Span | undefined;
  /** The tokens its model calls reported, one entry per provider and model (made on first use). */
  private usage: TokenUsage[] | undefined;
  /**
   * Resolves once the run's log has stored every event shown so far (set by the pipeline when its
   * reader is a log): its end is recorded after, so a run recorded ended shows all it stored in its log.
   */
  logStored: (() => Promise<void>) | undefined;
  /** Parks the run (its reader tears it down here): set by the pipeline when parking is on. */
  onPark: ((toolCallId: string, remainingMs: number) => void) | undefined;
  /** When parking is on: each frontend wait's countdown to parking, from its call's TOOL_CALL_END shown. */
  private readonly parks: ParkCountdowns | undefined;
  /** The steps completed so far and the messages up to the last one's end (made on the first). */
  private steps: Checkpoint['steps'];

  /**
   * `history` is what the model sees (stored history, then the incoming messages): handed to the
   * engine once, by agentCall(), and not kept after.
   */
  constructor(
    readonly prepared: PreparedRun,
    private readonly deps: RunDeps,
    private history: StoredMessage[] = [],
    /** Approvals answered by this run's `resume`: their calls run (or are declined) before the model goes on. */
    readonly resumed: AnsweredInterrupt[] = [],
    /** A continued run: what the steps an earlier replica completed showed (stored with its own) and spent. */
    private readonly carried: Carried = { messages: [] },
  ) {
    this.tools = new RunToolCalls(prepared, deps.toolCalls);
    if (carried.usage?.length) this.usage = carried.usage.map((u) => ({ ...u }));
    if (deps.parkAfterMs > 0)
      this.parks = new ParkCountdowns(deps.parkAfterMs, (toolCallId, remainingMs) =>
        this.onPark?.(toolCallId, remainingMs),
      );
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
    return this.startedAt !== 0;
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
    if (tracingOn()) this.span = this.startSpan();
    this.deps.metrics.activeRuns.inc();
    this.startedAt = performance.now();
    this.deps.broker.track(this.runId, this);
    this.deps.leases.hold(this.runId, this);
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
      messages: this.stores ? this.produced(this.collector.openTextIds()) : undefined,
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
  handOver(): HandedRun {
    this.deps.broker.untrack(this.runId);
    this.tools.results.complete();
    this.deps.leases.release(this.runId, this);
    this.stop('CANCELLED', 'Handed over to another replica');
    this.span?.end();
    this.deps.metrics.activeRuns.dec();
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

  private startSpan(): Span | undefined {
    const { runId, threadId, principal, agent } = this.prepared;
    return startSpan(`run ${agent.definition.id}`, SpanKind.INTERNAL, {
      'io_bridge.run.id': runId,
      'io_bridge.thread.id': threadId,
      'io_bridge.agent.id': agent.definition.id,
      'io_bridge.owner.hash': ownerHash(principal.resourceId),
    });
  }

  /** The run's agent call (agentCallOf), its history given up here. */
  agentCall(): { messages: unknown; call: AgentCall } {
    const history = this.history;
    this.history = [];
    return agentCallOf(this.prepared, history, this, this.abort.signal, this.deps.log, this.span);
  }

  /** `source` subscribed with the run's span current: model and tool calls nest under it. */
  inSpan<T>(source: Observable<T>): Observable<T> {
    const span = this.span;
    if (!span) return source;
    return new Observable<T>((subscriber) => withSpan(span, () => source.subscribe(subscriber)));
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
    if (event.type === 'TOOL_CALL_END') this.parks?.shown(event.toolCallId);
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
      void generateTitle(this.prepared, this.deps.conversations, this.deps.log, this.usage);
  }

  reportResult(toolCallId: string, content: unknown): void {
    this.tools.report({ toolCallId, content });
  }

  async waitForFrontendResult(toolCallId: string): Promise<ToolResult> {
    const timeoutMs = this.deps.frontendToolTimeoutMs;
    const timer = setTimeout(() => {
      this.deps.metrics.toolResultTimeouts.inc();
      this.stop('TOOL_RESULT_TIMEOUT', `No result for tool call ${toolCallId} within ${timeoutMs} ms`);
    }, timeoutMs);
    const waited = this.deps.metrics.frontendToolWait.startTimer();
    // Waiting long: parked (held nowhere); a posted result wakes it on whichever replica it reaches.
    const stopCountdown =
      this.deps.parkAfterMs < timeoutMs && this.onPark
        ? this.parks?.start(toolCallId, Date.now() + timeoutMs)
        : undefined;
    try {
      const { runId, principal } = this.prepared;
      return await this.deps.broker.wait(runId, principal.resourceId, toolCallId, this.abort.signal);
    } catch (err) {
      // Not the tool's failure, so not for the model to see: the run itself cannot go on.
      if (isDatabaseUnavailable(err)) this.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
      throw err;
    } finally {
      clearTimeout(timer);
      stopCountdown?.();
      waited();
    }
  }

  /**
   * The guard's `end`: decides how the run ends now that its stream stopped, records it (with the
   * messages the client was shown) and returns the terminal event's content.
   */
  async end({ outcome, failure }: Stopped, closeOpen: () => void): Promise<Terminal> {
    this.deps.broker.untrack(this.runId);
    this.tools.results.complete();
    const ending = decideEnding(
      {
        run: this.prepared,
        signal: this.abort.signal,
        log: this.deps.log,
        unanswered: () => this.tools.unanswered(),
      },
      outcome,
      failure,
    );
    // The ending is decided: a lease lost from now on changes nothing (and endRun then writes nothing).
    this.deps.leases.release(this.runId, this);
    let code: RunErrorCode | undefined;
    try {
      const terminal = await this.record(ending, closeOpen);
      code = 'code' in terminal ? terminal.code : undefined;
      return terminal;
    } finally {
      if (this.span) endRunSpan(this.span, ending.end.status, code, this.usage);
      this.deps.metrics.activeRuns.dec();
      this.deps.metrics.runOutcomes.inc({ status: ending.end.status, code: ending.end.code ?? 'none' });
      if (this.startedAt) {
        this.deps.metrics.runDuration.observe(
          { agent: this.prepared.agent.definition.id, status: ending.end.status },
          (performance.now() - this.startedAt) / 1000,
        );
      }
    }
  }

  /** Records the end (recordEnding): what was open is closed first when the run failed, text cut short marked so. */
  private async record(ending: Ending, closeOpen: () => void): Promise<Terminal> {
    const cut = ending.terminal ? this.collector.openTextIds() : new Set<string>();
    if (ending.terminal) closeOpen();
    // A database that may let the lease lapse is not waited on; the fence keeps the log whole then.
    if (!this.leaseMayLapse) await this.logStored?.();
    const terminal = await recordEnding(ending, {
      run: this.prepared,
      attempt: this.attempt,
      usage: this.usage,
      produced: this.stores ? this.produced(cut) : [],
      leaseMayLapse: this.leaseMayLapse,
      deps: this.deps,
    });
    if (!('code' in terminal)) this.titleWanted = this.prepared.generateTitle && this.stores;
    return terminal;
  }
}
