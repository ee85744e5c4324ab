import { Logger } from '@nestjs/common';
import { concatMap, EMPTY, from, MonoTypeOperatorFunction, Observable, of, Subject, tap } from 'rxjs';
import { RUN_CONTEXT_KEY, RunToolContext, ToolResult } from '../agents/tools/run-tools';
import { aguiToModelMessages } from '../threads/agui-to-model';
import { MessageCollector } from '../threads/message-collector';
import { textOf } from '../threads/message-format';
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
import { RunLeases } from './run-leases';
import { RunEnd } from './runs.repository';
import { ToolCallsRepository } from './tool-calls.repository';

export type { PreparedRun };

export type RunDeps = {
  conversations: ConversationStore;
  leases: RunLeases;
  toolCalls: ToolCallsRepository;
  broker: FrontendToolBroker;
  frontendToolTimeoutMs: number;
  metrics: Metrics;
  log: Logger;
};

type Ending = {
  end: RunEnd;
  terminal: { code: RunErrorCode; message: string } | undefined;
  result?: unknown;
};

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
export class RunExecution implements RunToolContext {
  private readonly abort = new AbortController();
  private readonly frontendCalls = new Set<string>();
  private readonly reported = new Set<string>();
  private readonly reports = new Subject<ReportedResult>();
  private readonly collector = new MessageCollector();
  /** Events shown so far: the lease checkpoints what the client saw when this moves. */
  private shown = 0;
  private terminalShown = false;
  private titleWanted = false;
  private untrack: () => void = () => undefined;
  private release: () => void = () => undefined;
  private timeRun: (labels: { status: string }) => void = () => undefined;
  /** The run's span (a child of its request's), when tracing is on. */
  private span: Span | undefined;

  constructor(
    readonly prepared: PreparedRun,
    private readonly deps: RunDeps,
  ) {}

  /** Whether what the run produces goes into its thread. */
  private get stores(): boolean {
    return !this.prepared.readOnly && !this.prepared.stateless;
  }

  /** Whether its terminal event went out. */
  get ended(): boolean {
    return this.terminalShown;
  }

  get runId(): string {
    return this.prepared.input.runId;
  }

  /** Aborted when the run stops; MastraRunner aborts the provider call with it. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Tool results reported by the tools themselves, for the guard to place after their TOOL_CALL_END. */
  get results(): Observable<ReportedResult> {
    return this.reports;
  }

  /** Holds the run on this instance (lease, cancel route, metrics); the stream starts on subscription. */
  start(): void {
    if (tracingOn()) this.span = this.startSpan();
    this.deps.metrics.activeRuns.inc();
    this.timeRun = this.deps.metrics.runDuration.startTimer({ agent: this.prepared.agent.definition.id });
    this.untrack = this.deps.broker.track(this.prepared.input.runId, (code, message) =>
      this.stop(code, message),
    );
    this.release = this.deps.leases.hold(this.prepared.input.runId, {
      resourceId: this.prepared.principal.resourceId,
      lost: () => this.stop('INTERRUPTED', 'The run was interrupted; please retry'),
      unrenewable: () => this.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE),
      shown: () => this.shown,
      checkpoint: () => (this.stores ? this.collector.produced(this.collector.openTextIds()) : undefined),
    });
  }

  stop(code: RunErrorCode, message: string): void {
    if (!this.abort.signal.aborted) this.abort.abort(new StopReason(code, message));
  }

  private startSpan(): Span | undefined {
    const { input, principal, agent } = this.prepared;
    return startSpan(`run ${agent.definition.id}`, SpanKind.INTERNAL, {
      'io_bridge.run.id': input.runId,
      'io_bridge.thread.id': input.threadId,
      'io_bridge.agent.id': agent.definition.id,
      'io_bridge.owner.hash': ownerHash(principal.resourceId),
    });
  }

  /** The run's agent call: its history, options and request context (with this run for its tools). */
  agentCall(): { messages: unknown; call: AgentCall } {
    const run = this.prepared;
    return {
      messages: aguiToModelMessages(run.history),
      call: {
        options: {
          maxSteps: run.maxSteps,
          context: run.context,
          toolsets: { frontend: run.frontendTools },
          modelSettings: run.modelSettings,
          ...(run.structuredOutput
            ? { structuredOutput: { schema: linearTimeSchema(run.structuredOutput.schema) } }
            : {}),
        },
        context: {
          ...run.extras,
          forwardedProps: run.input.forwardedProps ?? {},
          [RUN_CONTEXT_KEY]: this,
        },
        signal: this.abort.signal,
        pace: run.pace,
      },
    };
  }

  /** `source` subscribed with the run's span current: model and tool calls nest under it. */
  inSpan<T>(source: Observable<T>): Observable<T> {
    return new Observable<T>((subscriber) => withSpan(this.span, () => source.subscribe(subscriber)));
  }

  /**
   * The run's part in the chunk stream: Mastra's copy of a result a tool reported itself is dropped;
   * a frontend tool call is registered before it goes on (so before its TOOL_CALL_END), the chunks
   * behind it waiting; a frontend call Mastra refused (arguments not matching the schema) is abandoned.
   */
  ownToolCalls(): MonoTypeOperatorFunction<MastraChunk> {
    return (chunks) =>
      chunks.pipe(
        concatMap((chunk) => {
          const p = chunk.payload ?? {};
          if (chunk.type === 'tool-result' || chunk.type === 'tool-error') {
            if (this.reported.has(p.toolCallId)) return EMPTY;
            if (this.frontendCalls.has(p.toolCallId)) this.abandon(p.toolCallId);
          }
          if (chunk.type === 'tool-call' && this.prepared.frontendTools[p.toolName] !== undefined) {
            return from(this.registerFrontendCall(p.toolCallId, p.toolName).then(() => chunk));
          }
          return of(chunk);
        }),
      );
  }

  /** Counts and collects what the client is shown; after RUN_FINISHED, names the thread if asked to. */
  observe(): MonoTypeOperatorFunction<AguiEvent> {
    return tap((event) => {
      this.collector.observe(event);
      this.shown++;
      if (!TERMINAL_TYPES.has(event.type)) return;
      this.terminalShown = true;
      if (this.titleWanted && event.type === 'RUN_FINISHED') void this.generateTitle();
    });
  }

  /** Recorded before TOOL_CALL_END goes out; a result posted earlier (on START) was kept and is claimed here. */
  private async registerFrontendCall(toolCallId: string, toolName: string): Promise<void> {
    const { input, principal } = this.prepared;
    await this.deps.toolCalls.register(input.runId, principal.resourceId, toolCallId, toolName);
    this.frontendCalls.add(toolCallId);
  }

  private abandon(toolCallId: string): void {
    void this.deps.toolCalls
      .abandon(this.prepared.input.runId, this.prepared.principal.resourceId, toolCallId)
      .catch(() => undefined);
  }

  reportResult(toolCallId: string, content: unknown): void {
    this.reported.add(toolCallId);
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
      const { input, principal } = this.prepared;
      return await this.deps.broker.wait(input.runId, principal.resourceId, toolCallId, this.abort.signal);
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
    this.untrack();
    this.reports.complete();
    const ending = this.ending(outcome, failure);
    // The ending is decided: a lease lost from now on changes nothing (and endRun then writes nothing).
    this.release();
    let code: RunErrorCode | undefined;
    try {
      const terminal = await this.record(ending, closeOpen);
      code = 'code' in terminal ? terminal.code : undefined;
      return terminal;
    } finally {
      if (this.span) this.endSpan(ending.end.status, code, this.span);
      this.deps.metrics.activeRuns.dec();
      this.deps.metrics.runOutcomes.inc({ status: ending.end.status, code: ending.end.code ?? 'none' });
      this.timeRun({ status: ending.end.status });
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
        terminal: { code: reason.code, message: reason.message },
      };
    }
    if (failure !== undefined && isDatabaseUnavailable(failure)) {
      this.deps.log.warn(
        `run ${this.prepared.input.runId}: database unavailable: ${(failure as Error).message}`,
      );
      return failed('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
    }
    if (failure !== undefined) {
      this.deps.log.error(
        failure instanceof Error ? (failure.stack ?? failure.message) : 'run failed',
        `run ${this.prepared.input.runId}`,
      );
      return failed('INTERNAL', 'The run failed unexpectedly');
    }
    switch (outcome?.kind) {
      case 'finished':
        return { end: { status: 'finished' }, terminal: undefined, result: outcome.result };
      case 'error':
        this.deps.log.warn(`run ${this.prepared.input.runId}: the model failed: ${outcome.message}`);
        return failed(
          outcome.structuredOutput ? 'STRUCTURED_OUTPUT_INVALID' : 'MODEL_ERROR',
          outcome.message,
        );
      case 'aborted':
        return failed('CANCELLED', 'The run was cancelled', 'cancelled');
      default:
        return failed('MODEL_ERROR', 'The model stream ended unexpectedly');
    }
  }

  private endSpan(status: RunEnd['status'], code: RunErrorCode | undefined, span: Span): void {
    const outcome = code && status === 'finished' ? 'error' : status;
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
    const { runId, threadId } = this.prepared.input;
    const cut = terminal ? this.collector.openTextIds() : new Set<string>();
    if (terminal) closeOpen();
    try {
      await this.deps.conversations.endRun({
        runId,
        threadId,
        resourceId: this.prepared.principal.resourceId,
        end: ending.end,
        produced: this.stores ? this.collector.produced(cut) : [],
      });
    } catch (err) {
      this.deps.log.error(
        `run ${this.prepared.input.runId}: could not record its end: ${(err as Error).message}`,
      );
      terminal ??= isDatabaseUnavailable(err)
        ? { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE }
        : { code: 'INTERNAL', message: 'The run could not be recorded' };
    }
    if (terminal) return terminal;
    this.titleWanted = this.prepared.generateTitle && this.stores;
    return { result: ending.result };
  }

  /** memoryOptions.generateTitle: the agent's model names the thread, after the run, off the stream's path. */
  private async generateTitle(): Promise<void> {
    const first = this.prepared.input.messages.find((m) => m.role === 'user');
    const text = first ? textOf(first.content).trim() : '';
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
          this.prepared.input.threadId,
          this.prepared.principal.resourceId,
          title,
        );
    } catch (err) {
      this.deps.log.warn(
        `run ${this.prepared.input.runId}: title generation failed: ${(err as Error).message}`,
      );
    }
  }
}

function failed(code: RunErrorCode, message: string, status: 'error' | 'cancelled' = 'error'): Ending {
  return { end: { status, code, message }, terminal: { code, message } };
}
