import { AsyncResource } from 'node:async_hooks';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Observable, Subscriber } from 'rxjs';
import { AgentsService, RegisteredAgent } from '../agents/agents.service';
import { frontendTool } from '../agents/tools/run-tools';
import { idScope, Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { contextToModelMessages } from '../threads/agui-to-model';
import { DrainState } from '../ops/drain.service';
import { Metrics } from '../ops/metrics.service';
import { AguiEvent, RunErrorCode } from './agui-events';
import { RunAgentInputDto, ToolDto } from './dto/run-agent-input.dto';
import { RunView } from './dto/run-view.dto';
import { isActiveStatus } from './run.entity';
import { FrontendToolBroker } from './frontend-tools.broker';
import { PreparedRun, RunDeps, RunExecution } from './run-execution';
import { titleFrom, toStored } from '../threads/message-format';
import { ConversationStore } from './conversation.store';
import { RunLeases } from './run-leases';
import { parseForwardedProps } from './forwarded-props';
import { RunsRepository } from './runs.repository';
import { ToolCallsRepository } from './tool-calls.repository';

/**
 * Runs queued functions in order, one per event-loop turn. While `busy()` says requests are being
 * admitted, a function waits, but never longer than `maxWaitMs` after it was queued: a burst of
 * requests gets its RUN_STARTED events out first, and under sustained load every engine still
 * starts within `maxWaitMs`.
 */
export class TurnQueue {
  private readonly queue: Array<{ fn: () => void; at: number }> = [];
  private scheduled = false;

  constructor(
    private readonly busy: () => boolean,
    private readonly maxWaitMs = 100,
  ) {}

  push(fn: () => void): void {
    // Each function runs in the async context it was queued from (its request's log fields).
    this.queue.push({ fn: AsyncResource.bind(fn), at: Date.now() });
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => this.runOne());
  }

  private runOne(): void {
    const waited = Date.now() - this.queue[0].at;
    if (this.busy() && waited < this.maxWaitMs) {
      setTimeout(() => this.runOne(), 1);
      return;
    }
    this.scheduled = false;
    this.queue.shift()!.fn();
    this.schedule();
  }
}

/** A run that passed every check and was claimed: its events, and how it ends when nobody reads it. */
export type StartedRun = {
  /** Never errors: every failure becomes RUN_ERROR, after which it completes. Unsubscribing stops the run. */
  events$: Observable<AguiEvent>;
  /** How long the run goes on once its last reader left (forwardedProps.disconnectGraceMs or the default). */
  disconnectGraceMs: number;
  /** Stops the run as its client having left (RUN_ERROR CANCELLED still goes to the events). */
  abandon: () => void;
};

/** Starts runs: refuses what can be refused before streaming, records the run, returns its event Observable. */
@Injectable()
export class RunsService {
  private readonly log = new Logger(RunsService.name);
  private readonly shadowWarned = new Set<string>();
  private readonly executions = new Set<RunExecution>();
  /** Runs between their request and their RUN_STARTED: engines wait for them (RUN_STARTED comes first). */
  private admitting = 0;
  private readonly engineStarts = new TurnQueue(() => this.admitting > 0);
  private readonly deps: RunDeps;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: AgentsService,
    private readonly runs: RunsRepository,
    private readonly toolCalls: ToolCallsRepository,
    private readonly broker: FrontendToolBroker,
    private readonly conversations: ConversationStore,
    private readonly leases: RunLeases,
    private readonly drain: DrainState,
    private readonly metrics: Metrics,
  ) {
    this.deps = {
      conversations,
      leases,
      toolCalls,
      broker,
      frontendToolTimeoutMs: config.frontendToolTimeoutMs,
      metrics,
      log: this.log,
    };
  }

  /**
   * Everything that can be refused is refused here, before any byte is streamed. `clientGone` aborts
   * when the client disconnects: if it did while the run was being claimed, the run is recorded
   * `cancelled` without starting, and there is no stream (undefined).
   */
  async start(
    input: RunAgentInputDto,
    principal: Principal,
    clientGone?: AbortSignal,
  ): Promise<StartedRun | undefined> {
    if (this.drain.isDraining) throw new DomainError('SHUTTING_DOWN', 'The service is shutting down; retry');
    this.admitting++;
    let admitted = false;
    const admit = () => {
      if (!admitted) this.admitting--;
      admitted = true;
    };
    try {
      const prepared = this.prepare(input, principal);
      const claimed = await this.conversations.claim({
        threadId: input.threadId,
        runId: input.runId,
        resourceId: principal.resourceId,
        agentId: prepared.agent.definition.id,
        leaseMs: this.leases.leaseMs,
        title: prepared.generateTitle || prepared.readOnly ? undefined : titleFrom(prepared.incoming),
        incoming: prepared.incoming,
        lastMessages: prepared.lastMessages,
        readOnly: prepared.readOnly,
        memory: prepared.memory,
      });
      prepared.history = claimed.history;
      prepared.stateless = claimed.stateless;
      if (clientGone?.aborted) {
        admit();
        await this.cancelUnstarted(prepared);
        return undefined;
      }
      let execution: RunExecution | undefined;
      const events$ = new Observable<AguiEvent>((subscriber) => {
        execution = new RunExecution(prepared, this.deps, (event) => subscriber.next(event));
        const teardown = this.execute(execution, subscriber);
        admit();
        return teardown;
      });
      const abandon = () => {
        if (execution && !execution.ended) execution.stop('CANCELLED', 'The client disconnected');
      };
      return { events$, disconnectGraceMs: prepared.disconnectGraceMs, abandon };
    } catch (err) {
      admit();
      throw err;
    }
  }

  /** A run whose client left before its stream began: recorded at once, so its thread is free. */
  private async cancelUnstarted(run: PreparedRun): Promise<void> {
    const end = { status: 'cancelled', code: 'CANCELLED', message: 'The client disconnected' } as const;
    try {
      await this.conversations.endRun({
        runId: run.input.runId,
        threadId: run.input.threadId,
        resourceId: run.principal.resourceId,
        end,
        produced: [],
      });
    } catch (err) {
      // Not renewed, its lease lapses and the reaper frees the thread instead.
      this.log.warn(`run ${run.input.runId}: could not record its cancel: ${(err as Error).message}`);
    }
    this.log.log(`run ${run.input.runId}: the client left before its stream began; recorded cancelled`);
    this.metrics.runOutcomes.inc({ status: end.status, code: end.code });
  }

  async get(runId: string, principal: Principal): Promise<RunView> {
    const run = await this.runs.findOne(runId, idScope(principal, 'read'));
    if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
    const active = isActiveStatus(run.status);
    return {
      id: run.id,
      threadId: run.threadId,
      agentId: run.agentId,
      status: run.status,
      startedAt: run.startedAt.toISOString(),
      ...(run.finishedAt ? { finishedAt: run.finishedAt.toISOString() } : {}),
      ...(run.errorCode
        ? { error: { code: run.errorCode, message: run.errorMessage ?? run.errorCode } }
        : {}),
      pendingToolCalls: active ? await this.toolCalls.pending(run.id, run.resourceId) : [],
    };
  }

  async submitToolResult(
    runId: string,
    toolCallId: string,
    principal: Principal,
    result: { content?: unknown; error?: string },
  ): Promise<void> {
    const owner = idScope(principal, 'write');
    const stored = await this.toolCalls.submit(runId, owner, toolCallId, result);
    // Kept while the run registers the call (a result posted on TOOL_CALL_START); a made-up call is a 404.
    if (stored === 'early' && !(await this.toolCalls.awaitRegistration(runId, owner, toolCallId))) {
      throw new DomainError('NOT_FOUND', `Tool call '${toolCallId}' not found in run '${runId}'`);
    }
  }

  async cancel(runId: string, principal: Principal): Promise<void> {
    const run = await this.runs.findOne(runId, idScope(principal, 'write'));
    if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
    if (!isActiveStatus(run.status)) {
      throw new DomainError('RUN_NOT_ACTIVE', `Run '${runId}' is not active`);
    }
    await this.broker.requestCancel(runId);
  }

  private prepare(input: RunAgentInputDto, principal: Principal): PreparedRun {
    const { limits } = this.config;
    if (input.messages.length > limits.maxMessages) {
      throw new DomainError('VALIDATION_FAILED', 'Too many messages', [
        { path: 'messages', message: `at most ${limits.maxMessages} messages per run` },
      ]);
    }
    if (input.tools.length > limits.maxTools) {
      throw new DomainError('VALIDATION_FAILED', 'Too many tools', [
        { path: 'tools', message: `at most ${limits.maxTools} tools per run` },
      ]);
    }
    if (input.context.length > limits.maxContext) {
      throw new DomainError('VALIDATION_FAILED', 'Too many context entries', [
        { path: 'context', message: `at most ${limits.maxContext} context entries per run` },
      ]);
    }
    const ids = new Set<string>();
    for (const [i, m] of input.messages.entries()) {
      if (ids.has(m.id)) {
        throw new DomainError('VALIDATION_FAILED', 'Duplicate message id', [
          { path: `messages.${i}.id`, message: `message id '${m.id}' appears twice` },
        ]);
      }
      ids.add(m.id);
    }
    const options = parseForwardedProps(input.forwardedProps, this.config.ceilings, input.threadId);
    const agent = this.agents.get(options.agentId);
    const defaults = agent.definition.defaults;
    return {
      input,
      principal,
      agent,
      incoming: input.messages.map((m) => toStored(m as unknown as Record<string, unknown>)),
      history: [],
      context: contextToModelMessages(input.context),
      frontendTools: this.frontendTools(agent, input.tools),
      maxSteps: options.maxSteps ?? defaults?.maxSteps ?? limits.maxSteps,
      lastMessages: options.lastMessages ?? defaults?.lastMessages ?? this.config.lastMessages,
      modelSettings: { ...defaults?.modelSettings, ...options.modelSettings },
      readOnly: options.readOnly,
      memory: options.namesMemory || this.config.storeAllRuns,
      stateless: false,
      generateTitle: options.generateTitle,
      ...(options.structuredOutput ? { structuredOutput: options.structuredOutput } : {}),
      extras: options.extras,
      disconnectGraceMs:
        options.disconnectGraceMs ??
        Math.min(this.config.disconnectGrace.defaultMs, this.config.disconnectGrace.maxMs),
    };
  }

  /** Declared tools, except those named like a server tool: the server tool wins (CONTRACT section 4). */
  private frontendTools(agent: RegisteredAgent, tools: ToolDto[]): PreparedRun['frontendTools'] {
    const out: PreparedRun['frontendTools'] = {};
    for (const tool of tools) {
      if (agent.serverToolNames.has(tool.name)) {
        const key = `${agent.definition.id}/${tool.name}`;
        if (!this.shadowWarned.has(key)) {
          this.shadowWarned.add(key);
          this.log.warn(
            `declared tool '${tool.name}' has the name of a server tool of '${agent.definition.id}'; the server tool runs`,
          );
        }
        continue;
      }
      out[tool.name] = frontendTool(tool);
    }
    return out;
  }

  /** Subscribes one run: RUN_STARTED at once, then the engine; unsubscribing aborts it. */
  /** Runs streaming on this instance. */
  get activeCount(): number {
    return this.executions.size;
  }

  /** Ends every run of this instance with RUN_ERROR `code` (graceful shutdown); resolves when all are recorded. */
  async stopAll(code: RunErrorCode, message: string, timeoutMs: number): Promise<void> {
    for (const execution of this.executions) execution.stop(code, message);
    const deadline = Date.now() + timeoutMs;
    while (this.executions.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  private execute(execution: RunExecution, subscriber: Subscriber<AguiEvent>): () => void {
    this.executions.add(execution);
    execution.start();
    // The engine starts once RUN_STARTED has been written, one engine start per event-loop turn, so
    // a burst of runs does not hold back the RUN_STARTED (and the I/O) of the requests behind it.
    this.engineStarts.push(() => {
      execution
        .drive()
        .catch((err: unknown) => {
          this.log.error(
            err instanceof Error ? (err.stack ?? err.message) : 'run failed',
            `run ${execution.runId}`,
          );
        })
        .finally(() => {
          this.executions.delete(execution);
          subscriber.complete();
        });
    });
    return () => {
      if (!execution.ended) execution.stop('CANCELLED', 'The client disconnected');
    };
  }
}
