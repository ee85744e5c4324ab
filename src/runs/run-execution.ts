import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { safeErrorMessage } from '../common/errors';
import {
  MonoTypeOperatorFunction,
  Observable,
  Observer,
  Subscribable,
  Subscriber,
  Unsubscribable,
} from 'rxjs';
import { RUN_CONTEXT_KEY, RunToolContext, ToolResult } from '../agents/tools/run-tools';
import { aguiToModelMessages } from '../threads/agui-to-model';
import { MessageCollector } from '../threads/message-collector';
import { StoredMessage } from '../threads/message-format';
import { TITLE_PROMPT } from '../agents/prompts';
import { linearTimeSchema } from '../common/json-schema';
import { isDatabaseUnavailable } from '../database/database-errors';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, ownerHash, startSpan, tracingOn, withSpan } from '../ops/tracing';

import { AguiEvent, RunErrorCode, TERMINAL_TYPES } from './agui-events';
import { FrontendToolBroker } from './frontend-tools.broker';
import { Metrics } from '../ops/metrics.service';
import { MastraChunk, Outcome } from './mastra-to-agui';
import { AgentCall } from './mastra-runner';
import { ReportedResult, Stopped, Terminal } from './run-lifecycle';
import { PreparedRun } from './run-preparer';
import { ConversationStore } from './conversation.store';
import { LeaseHolder, RunLeases } from './run-leases';
import { RunEnd } from './runs.repository';
import { ToolCallsRepository } from './tool-calls.repository';
import { AnsweredInterrupt, ApprovalRequest, InterruptsRepository } from './interrupts.repository';
import type { RunFinishedOutcome } from '../protocol/outcomes';
import { addUsage, TokenUsage, tokensOf } from '../protocol/usage';
import type { ModelCallObserver } from '../agents/model-calls';

export type { PreparedRun };

export type RunDeps = {
  conversations: ConversationStore;
  interrupts: InterruptsRepository;
  approvalTtlMs: number;
  leases: RunLeases;
  toolCalls: ToolCallsRepository;
  broker: FrontendToolBroker;
  frontendToolTimeoutMs: number;
  metrics: Metrics;
  log: Logger;
};

type Ending = {
  end: RunEnd;
  terminal: { code: RunErrorCode; message: string; outcome?: RunFinishedOutcome } | undefined;
  result?: unknown;
  /** Frontend calls left for the client to answer in its next run (ag-ui). */
  pending?: string[];
  /** Calls stopped at for a person's approval. */
  approvals?: ApprovalRequest[];
};

/** A tool call the model made in this run: its client name, arguments and assistant message. */
type ModelCall = { toolName: string; args: unknown; messageId?: string };

const DATABASE_UNAVAILABLE = 'The database is unavailable; retry later';

/** Why a run stopped when it was not the model's doing. */
export class StopReason extends Error {
  constructor(
    readonly code: RunErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One run on this instance, as far as it is more than its event stream: its stop signal, what its
 * tools report (results as soon as they exist, frontend waits), what it showed (the lease's
 * checkpoints, the stored messages), and its end, recorded before the terminal event goes out.
 * RunsService composes its stream: MastraRunner → ownToolCalls() → translate() → guardLifecycle().
 */
export class RunExecution implements RunToolContext, LeaseHolder, ModelCallObserver {
  private readonly abort = new AbortController();
  /** Tool calls registered for a frontend result, and those whose tool reported its result (made on first use). */
  private frontendCalls: Set<string> | undefined;
  private reported: Set<string> | undefined;
  private readonly reports = new ReportedResults();
  /** The model's tool calls in this run, and those that got a result (made on first use). */
  private calls: Map<string, ModelCall> | undefined;
  private resulted: Set<string> | undefined;
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
   * `history` is what the model sees (stored history, then the incoming messages): handed to the
   * engine once, by agentCall(), and not kept after.
   */
  constructor(
    readonly prepared: PreparedRun,
    private readonly deps: RunDeps,
    private history: StoredMessage[] = [],
    /** Approvals answered by this run's `resume`: their calls run (or are declined) before the model goes on. */
    readonly resumed: AnsweredInterrupt[] = [],
  ) {}

  get threadId(): string {
    return this.prepared.threadId;
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
    return this.reports;
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
    this.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
  }

  /** LeaseHolder: what to keep if this instance dies now. */
  checkpoint(): StoredMessage[] | undefined {
    return this.stores ? this.collector.produced(this.collector.openTextIds()) : undefined;
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

  /** The run's agent call: its history (given up here), options and request context (with this run for its tools). */
  agentCall(): { messages: unknown; call: AgentCall } {
    const run = this.prepared;
    const history = this.history;
    this.history = [];
    const aliases = run.aliases;
    return {
      messages: aguiToModelMessages(history, aliases.empty ? undefined : (name) => aliases.model(name)),
      call: {
        options: {
          maxSteps: run.maxSteps,
          context: run.context,
          toolsets: { frontend: run.frontendTools },
          ...(Object.keys(run.clientTools).length ? { clientTools: run.clientTools } : {}),
          // The provider calls retry themselves (ProviderCall), honouring Retry-After: not the engine too.
          modelSettings: { ...run.modelSettings, maxRetries: 0 },
          ...(run.structuredOutput
            ? { structuredOutput: { schema: linearTimeSchema(run.structuredOutput.schema) } }
            : {}),
        },
        context: {
          ...run.extras,
          forwardedProps: run.forwardedProps,
          [RUN_CONTEXT_KEY]: this,
        },
        signal: this.abort.signal,
        pace: run.pace,
      },
    };
  }

  /** `source` subscribed with the run's span current: model and tool calls nest under it. */
  inSpan<T>(source: Observable<T>): Observable<T> {
    const span = this.span;
    if (!span) return source;
    return new Observable<T>((subscriber) => withSpan(span, () => source.subscribe(subscriber)));
  }

  /**
   * The run's part in the chunk stream: Mastra's copy of a result a tool reported itself is dropped;
   * a frontend tool call is registered before it goes on (so before its TOOL_CALL_END), the chunks
   * behind it waiting, in order; a frontend call Mastra refused (arguments not matching the schema)
   * is abandoned. (concatMap would do the same at the cost of an inner subscription per chunk and
   * closures held per run.)
   */
  ownToolCalls(): MonoTypeOperatorFunction<MastraChunk> {
    return (chunks) =>
      new Observable<MastraChunk>((subscriber) => chunks.subscribe(new OwnToolCalls(this, subscriber)));
  }

  /**
   * What ownToolCalls() does with a chunk: drop it (false), pass it (true), or pass it once the
   * returned registration of its frontend call is done.
   */
  screen(chunk: MastraChunk): boolean | Promise<void> {
    const p = chunk.payload ?? {};
    if (chunk.type === 'tool-result' || chunk.type === 'tool-error') {
      (this.resulted ??= new Set()).add(p.toolCallId);
      if (this.reported?.has(p.toolCallId)) return false;
      if (this.frontendCalls?.has(p.toolCallId)) this.abandon(p.toolCallId);
    }
    if (chunk.type === 'tool-call') {
      (this.calls ??= new Map()).set(p.toolCallId, {
        toolName: this.prepared.aliases.client(p.toolName),
        args: p.args,
      });
      if (this.prepared.frontendTools[p.toolName] !== undefined)
        return this.registerFrontendCall(p.toolCallId, p.toolName);
    }
    return true;
  }

  /** The chunk with the tool's name as the client knows it (the model may know an alias). */
  clientNamed(chunk: MastraChunk): MastraChunk {
    const name: unknown = chunk.payload?.toolName;
    if (this.prepared.aliases.empty || typeof name !== 'string') return chunk;
    const client = this.prepared.aliases.client(name);
    return client === name ? chunk : { ...chunk, payload: { ...chunk.payload, toolName: client } };
  }

  /** An event shown: the assistant message of each tool call is kept for an approval request. */
  private noteParent(event: AguiEvent): void {
    if (event.type !== 'TOOL_CALL_START') return;
    const call = this.calls?.get(event.toolCallId);
    if (call) call.messageId = event.parentMessageId;
    else
      (this.calls ??= new Map()).set(event.toolCallId, {
        toolName: event.toolCallName,
        args: {},
        messageId: event.parentMessageId,
      });
  }

  /**
   * The calls of the model's last step nobody answered: those needing approval (they stop the run
   * with an interrupt) and the frontend calls of an `ag-ui` run (the client answers them next run).
   */
  private unanswered(): { pending: string[]; approvals: ApprovalRequest[] } {
    const pending: string[] = [];
    const approvals: ApprovalRequest[] = [];
    const run = this.prepared;
    for (const [toolCallId, call] of this.calls ?? []) {
      if (this.resulted?.has(toolCallId) || this.reported?.has(toolCallId)) continue;
      if (run.agent.approvalTools.has(call.toolName)) {
        approvals.push({
          toolCallId,
          toolName: call.toolName,
          args: call.args ?? {},
          messageId: call.messageId,
        });
      } else if (run.clientProtocol === 'ag-ui' && run.frontendNames.has(call.toolName))
        pending.push(toolCallId);
    }
    return { pending, approvals };
  }

  /**
   * The results of the approvals this run's `resume` answered, as the engine would report them:
   * an approved call runs now (its tool's own execute), a declined one tells the model so. Each
   * result joins the history the model sees, after its call (added when the history lacks it).
   */
  async resumedResults(): Promise<MastraChunk[]> {
    const chunks: MastraChunk[] = [];
    const history = this.history;
    const known = new Set(history.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []));
    for (const answer of this.resumed) {
      const tool = this.prepared.agent.approvalTools.get(answer.toolName);
      let result: unknown;
      if (!answer.approved || !tool?.execute) {
        result = {
          approved: false,
          message: `A person declined this call of ${answer.toolName}${answer.reason ? `: ${answer.reason}` : ''}`,
        };
      } else {
        try {
          result = await tool.execute(answer.args, { abortSignal: this.signal });
        } catch (err) {
          result = { error: safeErrorMessage(err, 'Tool failed') };
        }
      }
      if (!known.has(answer.toolCallId)) {
        history.push({
          id: answer.messageId ?? `${answer.toolCallId}-call`,
          role: 'assistant',
          toolCalls: [
            {
              id: answer.toolCallId,
              type: 'function',
              function: { name: answer.toolName, arguments: JSON.stringify(answer.args ?? {}) },
            },
          ],
        });
      }
      const messageId = randomUUID();
      history.push({
        id: messageId,
        role: 'tool',
        toolCallId: answer.toolCallId,
        content: typeof result === 'string' ? result : JSON.stringify(result ?? null),
      });
      chunks.push({
        type: 'tool-result',
        payload: { toolCallId: answer.toolCallId, toolName: answer.toolName, result, messageId },
      });
    }
    return chunks;
  }

  /**
   * Counts and collects an event the client is shown (before it goes out); after RUN_FINISHED, names
   * the thread if asked to.
   */
  observe(event: AguiEvent): void {
    this.collector.observe(event);
    this.noteParent(event);
    this.shown++;
    if (!TERMINAL_TYPES.has(event.type)) return;
    this.terminalShown = true;
    if (this.titleWanted && event.type === 'RUN_FINISHED') void this.generateTitle();
  }

  /** Recorded before TOOL_CALL_END goes out; a result posted earlier (on START) was kept and is claimed here. */
  private async registerFrontendCall(toolCallId: string, toolName: string): Promise<void> {
    const { runId, principal } = this.prepared;
    await this.deps.toolCalls.register(runId, principal.resourceId, toolCallId, toolName);
    (this.frontendCalls ??= new Set()).add(toolCallId);
  }

  private abandon(toolCallId: string): void {
    void this.deps.toolCalls
      .abandon(this.prepared.runId, this.prepared.principal.resourceId, toolCallId)
      .catch(() => undefined);
  }

  reportResult(toolCallId: string, content: unknown): void {
    (this.reported ??= new Set()).add(toolCallId);
    this.reports.next({ toolCallId, content });
  }

  async waitForFrontendResult(toolCallId: string): Promise<ToolResult> {
    const timeoutMs = this.deps.frontendToolTimeoutMs;
    const timer = setTimeout(() => {
      this.deps.metrics.toolResultTimeouts.inc();
      this.stop('TOOL_RESULT_TIMEOUT', `No result for tool call ${toolCallId} within ${timeoutMs} ms`);
    }, timeoutMs);
    const waited = this.deps.metrics.frontendToolWait.startTimer();
    try {
      const { runId, principal } = this.prepared;
      return await this.deps.broker.wait(runId, principal.resourceId, toolCallId, this.abort.signal);
    } catch (err) {
      // Not the tool's failure, so not for the model to see: the run itself cannot go on.
      if (isDatabaseUnavailable(err)) this.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
      throw err;
    } finally {
      clearTimeout(timer);
      waited();
    }
  }

  /**
   * The guard's `end`: decides how the run ends now that its stream stopped, records it (with the
   * messages the client was shown) and returns the terminal event's content.
   */
  async end({ outcome, failure }: Stopped, closeOpen: () => void): Promise<Terminal> {
    this.prepared.pace?.started();
    this.deps.broker.untrack(this.runId);
    this.reports.complete();
    const ending = this.ending(outcome, failure);
    // The ending is decided: a lease lost from now on changes nothing (and endRun then writes nothing).
    this.deps.leases.release(this.runId, this);
    let code: RunErrorCode | undefined;
    try {
      const terminal = await this.record(ending, closeOpen);
      code = 'code' in terminal ? terminal.code : undefined;
      return terminal;
    } finally {
      if (this.span) this.endSpan(ending.end.status, code, this.span);
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

  private ending(outcome: Outcome | undefined, failure: unknown): Ending {
    const signal = this.abort.signal;
    if (signal.aborted) {
      const reason =
        signal.reason instanceof StopReason
          ? signal.reason
          : new StopReason('CANCELLED', 'The run was cancelled');
      return {
        end: {
          status: reason.code === 'CANCELLED' ? 'cancelled' : 'error',
          code: reason.code,
          message: reason.message,
        },
        terminal: { code: reason.code, message: reason.message, ...this.cancelledOutcome(reason.code) },
      };
    }
    if (failure !== undefined && isDatabaseUnavailable(failure)) {
      this.deps.log.warn(`run ${this.prepared.runId}: database unavailable: ${(failure as Error).message}`);
      return failed('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
    }
    if (failure !== undefined) {
      this.deps.log.error(
        failure instanceof Error ? (failure.stack ?? failure.message) : 'run failed',
        `run ${this.prepared.runId}`,
      );
      return failed('INTERNAL', 'The run failed unexpectedly');
    }
    switch (outcome?.kind) {
      case 'finished': {
        const { pending, approvals } = this.unanswered();
        return {
          end: { status: 'finished' },
          terminal: undefined,
          result: outcome.result,
          ...(pending.length ? { pending } : {}),
          ...(approvals.length ? { approvals } : {}),
        };
      }
      case 'error':
        this.deps.log.warn(
          `run ${this.prepared.runId}: the model failed: ${outcome.model ? `${outcome.model.code} ${outcome.model.detail}` : outcome.message}`,
        );
        return failed(
          outcome.structuredOutput ? 'STRUCTURED_OUTPUT_INVALID' : (outcome.model?.code ?? 'MODEL_ERROR'),
          outcome.message,
        );
      case 'aborted': {
        const ending = failed('CANCELLED', 'The run was cancelled', 'cancelled');
        return { ...ending, terminal: { ...ending.terminal!, ...this.cancelledOutcome('CANCELLED') } };
      }
      default:
        return failed('MODEL_ERROR', 'The model stream ended unexpectedly');
    }
  }

  /** An AG-UI 1.x run of an `ag-ui` client that was cancelled ends RUN_FINISHED outcome cancelled, not RUN_ERROR. */
  private cancelledOutcome(code: RunErrorCode): { outcome?: RunFinishedOutcome } {
    const run = this.prepared;
    return code === 'CANCELLED' && run.agUi1 && run.clientProtocol === 'ag-ui'
      ? { outcome: { type: 'cancelled' } }
      : {};
  }

  private endSpan(status: RunEnd['status'], code: RunErrorCode | undefined, span: Span): void {
    const outcome = code && status === 'finished' ? 'error' : status;
    // The run's tokens over all its model calls (each chat span has its own).
    if (this.usage) {
      span.setAttribute('gen_ai.usage.input_tokens', sum(this.usage, 'inputTokens'));
      span.setAttribute('gen_ai.usage.output_tokens', sum(this.usage, 'outputTokens'));
    }
    span.setAttribute('io_bridge.run.outcome', outcome);
    if (code) span.setAttribute('io_bridge.run.error_code', code);
    if (outcome === 'error') endWithError(span, code ?? 'error');
    else span.end();
  }

  /**
   * Records the final status and the messages the client was shown first, so a client that sees the
   * terminal event can rely on both. What is open is closed first when the run failed (a cut-off
   * tool call gets its repaired arguments), so the messages stored are exactly those; text still
   * streaming when it failed is marked interrupted.
   */
  private async record(ending: Ending, closeOpen: () => void): Promise<Terminal> {
    let terminal = ending.terminal;
    const { runId, threadId } = this.prepared;
    const cut = terminal ? this.collector.openTextIds() : new Set<string>();
    if (terminal) closeOpen();
    let outcome: RunFinishedOutcome | undefined;
    let end = ending.end;
    if (ending.approvals) {
      try {
        const interrupts = await this.deps.interrupts.create(
          { runId, threadId, resourceId: this.prepared.principal.resourceId },
          ending.approvals,
          this.deps.approvalTtlMs,
        );
        outcome = { type: 'interrupt', interrupts };
      } catch (err) {
        this.deps.log.error(`run ${runId}: could not record its interrupts: ${(err as Error).message}`);
        terminal = isDatabaseUnavailable(err)
          ? { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE }
          : { code: 'INTERNAL', message: 'The run could not be recorded' };
        end = { status: 'error', ...terminal };
      }
    } else if (ending.pending) outcome = { type: 'success', pendingToolCallIds: ending.pending };
    try {
      await this.deps.conversations.endRun({
        runId,
        threadId,
        resourceId: this.prepared.principal.resourceId,
        end: this.usage ? { ...end, usage: this.usage } : end,
        produced: this.stores ? this.collector.produced(cut) : [],
      });
    } catch (err) {
      this.deps.log.error(`run ${this.prepared.runId}: could not record its end: ${(err as Error).message}`);
      terminal ??= isDatabaseUnavailable(err)
        ? { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE }
        : { code: 'INTERNAL', message: 'The run could not be recorded' };
    }
    // AG-UI 1.0 usage reaches only a request that declared 1.x; the record keeps it for every client.
    const usage = this.prepared.agUi1 && this.usage ? { usage: this.usage } : {};
    if (terminal) return { ...terminal, ...usage };
    this.titleWanted = this.prepared.generateTitle && this.stores;
    // AG-UI 1.0 outcomes reach only a request that declared 1.x; the record keeps the interrupts for every client.
    if (this.prepared.agUi1) outcome ??= { type: 'success' };
    return { result: ending.result, ...(this.prepared.agUi1 && outcome ? { outcome } : {}), ...usage };
  }

  /** memoryOptions.generateTitle: the agent's model names the thread, after the run, off the stream's path. */
  private async generateTitle(): Promise<void> {
    const text = this.prepared.titleSource ?? '';
    if (!text) return;
    try {
      const output = await this.prepared.agent.agent.stream(
        [{ role: 'user', content: `${TITLE_PROMPT}${text.slice(0, 2000)}` }],
        { maxSteps: 1, modelSettings: { maxOutputTokens: 32 } },
      );
      const title = (await output.text)
        .trim()
        .replace(/^["']|["']$/g, '')
        .split('\n')[0]
        .slice(0, 80);
      if (title)
        await this.deps.conversations.setTitleIfNone(
          this.prepared.threadId,
          this.prepared.principal.resourceId,
          title,
        );
    } catch (err) {
      this.deps.log.warn(`run ${this.prepared.runId}: title generation failed: ${(err as Error).message}`);
    }
  }
}

const sum = (usage: TokenUsage[], key: 'inputTokens' | 'outputTokens') =>
  usage.reduce((total, entry) => total + (entry[key] ?? 0), 0);

function failed(code: RunErrorCode, message: string, status: 'error' | 'cancelled' = 'error'): Ending {
  return { end: { status, code, message }, terminal: { code, message } };
}

/**
 * One subscription of RunExecution.ownToolCalls(): chunks go on in order, those behind a frontend
 * call's registration once it is done. An object, not closures: it is held as long as the run streams.
 */
class OwnToolCalls implements Observer<MastraChunk> {
  /** Chunks behind a registration, in order (made when one waits). */
  private behind: MastraChunk[] | undefined;
  private registering = false;
  private upstreamDone = false;

  constructor(
    private readonly run: RunExecution,
    private readonly subscriber: Subscriber<MastraChunk>,
  ) {}

  next(chunk: MastraChunk): void {
    if (!this.registering && !this.behind?.length) this.pass(chunk);
    else (this.behind ??= []).push(chunk);
  }

  error(err: unknown): void {
    this.subscriber.error(err);
  }

  complete(): void {
    this.upstreamDone = true;
    this.drain();
  }

  private pass(chunk: MastraChunk): void {
    const screened = this.run.screen(chunk);
    if (screened === true) return this.subscriber.next(this.run.clientNamed(chunk));
    if (screened === false) return;
    this.registering = true;
    screened.then(
      () => {
        this.registering = false;
        if (this.subscriber.closed) return;
        this.subscriber.next(this.run.clientNamed(chunk));
        this.drain();
      },
      (err: unknown) => this.subscriber.error(err),
    );
  }

  private drain(): void {
    while (!this.registering && this.behind?.length && !this.subscriber.closed)
      this.pass(this.behind.shift()!);
    if (!this.registering && this.upstreamDone) this.subscriber.complete();
  }
}

/**
 * The results a run's tools report, for its one reader (the guard). Not a Subject: that would hold
 * an observers array, a subscriber and its finalizers per open run for what is one callback.
 */
class ReportedResults implements Subscribable<ReportedResult>, Unsubscribable {
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
