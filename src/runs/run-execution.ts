import { Logger } from '@nestjs/common';
import { RequestContext } from '@mastra/core/request-context';
import { Tool } from '@mastra/core/tools';
import { RegisteredAgent } from '../agents/agents.service';
import { RUN_CONTEXT_KEY, RunToolContext, ToolResult } from '../agents/tools/run-tools';
import { Principal } from '../auth/principal';
import { aguiToModelMessages, ModelMessage } from '../threads/agui-to-model';
import { MessageCollector } from '../threads/message-collector';
import { StoredMessage, textOf } from '../threads/message-format';
import { TITLE_PROMPT } from '../agents/prompts';
import { linearTimeSchema } from '../common/json-schema';
import { isDatabaseUnavailable } from '../database/database-errors';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, ownerHash, startSpan, tracingOn, withSpan } from '../ops/tracing';

import { AguiEvent, RunErrorCode } from './agui-events';
import { RunAgentInputDto } from './dto/run-agent-input.dto';
import { FrontendToolBroker } from './frontend-tools.broker';
import { Metrics } from '../ops/metrics.service';
import { ModelSettings } from './forwarded-props';
import { MastraChunk, MastraToAgui, Outcome } from './mastra-to-agui';
import { RunLifecycle } from './run-lifecycle';
import { ConversationStore } from './conversation.store';
import { RunLeases } from './run-leases';
import { RunEnd } from './runs.repository';
import { ToolCallsRepository } from './tool-calls.repository';

/** A run that passed every check before streaming, with its model input ready. */
export type PreparedRun = {
  input: RunAgentInputDto;
  principal: Principal;
  agent: RegisteredAgent;
  /** The run input's messages, in the stored shape. */
  incoming: StoredMessage[];
  /** What the model sees: stored history, then the new incoming messages (set when the run is claimed). */
  history: StoredMessage[];
  context: ModelMessage[];
  frontendTools: Record<string, Tool<any, any, any, any, any, any, any>>;
  maxSteps: number;
  lastMessages: number;
  modelSettings: ModelSettings;
  /** Store nothing the run brings or produces (memoryOptions.readOnly). */
  readOnly: boolean;
  /** The request names memory (or STORE_ALL_RUNS): its thread is created when missing. */
  memory: boolean;
  /** Part of no thread (no memory named, no thread of the owner): stores nothing but its run record (set when claimed). */
  stateless: boolean;
  /** Ask the model for the thread's title instead of taking the first user message. */
  generateTitle: boolean;
  structuredOutput?: { schema: Record<string, unknown> };
  /** Unknown forwardedProps keys: the agent's request context. */
  extras: Record<string, unknown>;
  /** How long the run goes on once nobody reads it, for a reader to rejoin (0: it stops at once). */
  disconnectGraceMs: number;
};

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
 * One run on this instance: drives the Mastra stream through the translator into the lifecycle
 * guard, gives tools their run (results as soon as they exist, frontend waits), and records the end
 * before the terminal event is sent.
 */
export class RunExecution implements RunToolContext {
  private readonly abort = new AbortController();
  private readonly translator = new MastraToAgui();
  /** Results reported before their TOOL_CALL_END went out; sent right after it. */
  private readonly stashed = new Map<string, unknown>();
  private readonly frontendCalls = new Set<string>();
  private readonly reported = new Set<string>();
  private readonly lifecycle: RunLifecycle;
  private readonly collector = new MessageCollector();
  /** Text deltas not yet handed to the guard (see bufferText). */
  private text = '';
  private textFlushScheduled = false;
  /** Events shown so far: the lease checkpoints what the client saw when this moves. */
  private shown = 0;
  private untrack: () => void = () => undefined;
  private release: () => void = () => undefined;
  private timeRun: (labels: { status: string }) => void = () => undefined;
  /** The run's span (a child of its request's), when tracing is on. */
  private span: Span | undefined;

  constructor(
    private readonly run: PreparedRun,
    private readonly deps: RunDeps,
    emit: (event: AguiEvent) => void,
  ) {
    const { runId, threadId } = run.input;
    this.lifecycle = new RunLifecycle({
      threadId,
      runId,
      emit: (event) => {
        this.collector.observe(event);
        this.shown++;
        emit(event);
      },
      warn: (message) => deps.log.warn(`run ${runId}: ${message}`),
    });
  }

  /** Whether what the run produces goes into its thread. */
  private get stores(): boolean {
    return !this.run.readOnly && !this.run.stateless;
  }

  get ended(): boolean {
    return this.lifecycle.ended;
  }

  get runId(): string {
    return this.run.input.runId;
  }

  /** Reaches the provider call through the agent's model (see abortable-model.ts), not `agent.stream()`. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Emits RUN_STARTED; the engine starts with `drive()`. */
  start(): void {
    if (tracingOn()) this.span = this.startSpan();
    this.lifecycle.start();
    this.deps.metrics.activeRuns.inc();
    this.timeRun = this.deps.metrics.runDuration.startTimer({ agent: this.run.agent.definition.id });
    this.untrack = this.deps.broker.track(this.run.input.runId, (code, message) => this.stop(code, message));
    this.release = this.deps.leases.hold(this.run.input.runId, {
      resourceId: this.run.principal.resourceId,
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
    const { input, principal, agent } = this.run;
    return startSpan(`run ${agent.definition.id}`, SpanKind.INTERNAL, {
      'io_bridge.run.id': input.runId,
      'io_bridge.thread.id': input.threadId,
      'io_bridge.agent.id': agent.definition.id,
      'io_bridge.owner.hash': ownerHash(principal.resourceId),
    });
  }

  /** Runs the engine with the run's span current: model and tool calls nest under it. */
  drive(): Promise<void> {
    return withSpan(this.span, () => this.engine());
  }

  private async engine(): Promise<void> {
    let outcome: Outcome | undefined;
    let failure: unknown;
    const signal = this.abort.signal;
    try {
      const requestContext = new RequestContext();
      for (const [key, value] of Object.entries(this.run.extras)) requestContext.set(key, value);
      requestContext.set('forwardedProps', this.run.input.forwardedProps ?? {});
      requestContext.set(RUN_CONTEXT_KEY, this);
      const options = {
        maxSteps: this.run.maxSteps,
        context: this.run.context as any,
        toolsets: { frontend: this.run.frontendTools },
        requestContext,
        modelSettings: this.run.modelSettings,
      };
      const agent = this.run.agent.agent;
      const messages = aguiToModelMessages(this.run.history) as any;
      const output = this.run.structuredOutput
        ? await agent.stream(messages, {
            ...options,
            structuredOutput: { schema: linearTimeSchema(this.run.structuredOutput.schema) },
          })
        : await agent.stream(messages, options);
      const reader = (output.fullStream as ReadableStream<MastraChunk>).getReader();
      const stopReading = () => void reader.cancel().catch(() => undefined);
      signal.addEventListener('abort', stopReading, { once: true });
      try {
        while (!outcome) {
          const { done, value } = await reader.read();
          if (done) break;
          if (value.type === 'text-delta') {
            this.bufferText(value.payload?.text);
            continue;
          }
          this.flushText();
          // Only a frontend tool call waits (for its registration); every other chunk is handled in turn.
          if (value.type === 'tool-call' && this.run.frontendTools[value.payload?.toolName] !== undefined) {
            await this.registerFrontendCall(value.payload.toolCallId, value.payload.toolName);
          }
          outcome = this.handle(value);
        }
      } finally {
        signal.removeEventListener('abort', stopReading);
        if (outcome) void reader.cancel().catch(() => undefined);
      }
    } catch (err) {
      failure = err;
    } finally {
      this.untrack();
    }
    this.flushText();
    const ending = this.ending(outcome, failure);
    // The ending is decided: a lease lost from now on changes nothing (and endRun then writes nothing).
    this.release();
    try {
      const code = await this.end(ending);
      if (this.span) this.endSpan(ending.end.status, code, this.span);
    } finally {
      this.deps.metrics.activeRuns.dec();
      this.deps.metrics.runOutcomes.inc({ status: ending.end.status, code: ending.end.code ?? 'none' });
      this.timeRun({ status: ending.end.status });
    }
  }

  /** Recorded before TOOL_CALL_END goes out; a result posted earlier (on START) was kept and is claimed here. */
  private async registerFrontendCall(toolCallId: string, toolName: string): Promise<void> {
    const { input, principal } = this.run;
    await this.deps.toolCalls.register(input.runId, principal.resourceId, toolCallId, toolName);
    this.frontendCalls.add(toolCallId);
  }

  /**
   * Text deltas that arrive in the same event-loop turn go through the translator and the guard as
   * one delta: the engine hands over a chunk per token, often thousands within one turn, and this
   * keeps the per-chunk work of the run to a string concatenation. Anything else first flushes them.
   */
  private bufferText(text: unknown): void {
    if (typeof text !== 'string' || !text) return;
    this.text += text;
    if (!this.textFlushScheduled) {
      this.textFlushScheduled = true;
      setImmediate(() => this.flushText());
    }
  }

  private flushText(): void {
    this.textFlushScheduled = false;
    if (!this.text) return;
    const text = this.text;
    this.text = '';
    this.handle({ type: 'text-delta', payload: { text } });
  }

  private handle(chunk: MastraChunk): Outcome | undefined {
    const p = chunk.payload ?? {};
    // The tool itself reported this result as soon as it had it; Mastra's copy comes later.
    if ((chunk.type === 'tool-result' || chunk.type === 'tool-error') && this.reported.has(p.toolCallId)) {
      return undefined;
    }
    if (
      (chunk.type === 'tool-result' || chunk.type === 'tool-error') &&
      this.frontendCalls.has(p.toolCallId)
    ) {
      // Mastra refused the call (arguments not matching the schema) without waiting for the frontend.
      void this.deps.toolCalls
        .abandon(this.run.input.runId, this.run.principal.resourceId, p.toolCallId)
        .catch(() => undefined);
    }
    const translation = this.translator.translate(chunk);
    for (const event of translation.events) {
      this.lifecycle.push(event);
      if (event.type === 'TOOL_CALL_END' && event.toolCallId && this.stashed.has(event.toolCallId)) {
        const content = this.stashed.get(event.toolCallId);
        this.stashed.delete(event.toolCallId);
        this.lifecycle.push({ type: 'TOOL_CALL_RESULT', toolCallId: event.toolCallId, content });
      }
    }
    return translation.outcome;
  }

  reportResult(toolCallId: string, content: unknown): void {
    this.flushText();
    this.reported.add(toolCallId);
    if (this.lifecycle.toolCallEnded(toolCallId)) {
      this.lifecycle.push({ type: 'TOOL_CALL_RESULT', toolCallId, content });
    } else {
      this.stashed.set(toolCallId, content);
    }
  }

  async waitForFrontendResult(toolCallId: string): Promise<ToolResult> {
    const timeoutMs = this.deps.frontendToolTimeoutMs;
    const timer = setTimeout(() => {
      this.deps.metrics.toolResultTimeouts.inc();
      this.stop('TOOL_RESULT_TIMEOUT', `No result for tool call ${toolCallId} within ${timeoutMs} ms`);
    }, timeoutMs);
    const waited = this.deps.metrics.frontendToolWait.startTimer();
    try {
      const { input, principal } = this.run;
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
      this.deps.log.warn(`run ${this.run.input.runId}: database unavailable: ${(failure as Error).message}`);
      return failed('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
    }
    if (failure !== undefined) {
      this.deps.log.error(
        failure instanceof Error ? (failure.stack ?? failure.message) : 'run failed',
        `run ${this.run.input.runId}`,
      );
      return failed('INTERNAL', 'The run failed unexpectedly');
    }
    switch (outcome?.kind) {
      case 'finished':
        return { end: { status: 'finished' }, terminal: undefined, result: outcome.result };
      case 'error':
        this.deps.log.warn(`run ${this.run.input.runId}: the model failed: ${outcome.message}`);
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

  /**
   * Records the final status and the messages the client was shown first, so a client that sees the
   * terminal event can rely on both.
   */
  private endSpan(status: RunEnd['status'], code: RunErrorCode | undefined, span: Span): void {
    const outcome = code && status === 'finished' ? 'error' : status;
    span.setAttribute('io_bridge.run.outcome', outcome);
    if (code) span.setAttribute('io_bridge.run.error_code', code);
    if (outcome === 'error') endWithError(span, code ?? 'error');
    else span.end();
  }

  /** Records the end and sends the terminal event; returns the error code the client was shown, if any. */
  private async end(ending: Ending): Promise<RunErrorCode | undefined> {
    let terminal = ending.terminal;
    const { runId, threadId } = this.run.input;
    // What the client is shown is closed first (a cut-off tool call gets its repaired arguments), so
    // the messages stored are exactly those; text still streaming when the run failed is marked interrupted.
    const cut = terminal ? this.collector.openTextIds() : new Set<string>();
    if (terminal) this.lifecycle.closeOpen();
    try {
      await this.deps.conversations.endRun({
        runId,
        threadId,
        resourceId: this.run.principal.resourceId,
        end: ending.end,
        produced: this.stores ? this.collector.produced(cut) : [],
      });
    } catch (err) {
      this.deps.log.error(`run ${this.run.input.runId}: could not record its end: ${(err as Error).message}`);
      terminal ??= isDatabaseUnavailable(err)
        ? { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE }
        : { code: 'INTERNAL', message: 'The run could not be recorded' };
    }
    if (terminal) this.lifecycle.fail(terminal.code, terminal.message);
    else this.lifecycle.finish(ending.result);
    if (!terminal && this.run.generateTitle && this.stores) void this.generateTitle();
    return terminal?.code;
  }

  /** memoryOptions.generateTitle: the agent's model names the thread, after the run, off the stream's path. */
  private async generateTitle(): Promise<void> {
    const first = this.run.input.messages.find((m) => m.role === 'user');
    const text = first ? textOf(first.content).trim() : '';
    if (!text) return;
    try {
      const output = await this.run.agent.agent.stream(
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
          this.run.input.threadId,
          this.run.principal.resourceId,
          title,
        );
    } catch (err) {
      this.deps.log.warn(`run ${this.run.input.runId}: title generation failed: ${(err as Error).message}`);
    }
  }
}

function failed(code: RunErrorCode, message: string, status: 'error' | 'cancelled' = 'error'): Ending {
  return { end: { status, code, message }, terminal: { code, message } };
}
