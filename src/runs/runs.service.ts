import { Inject, Injectable, Logger } from '@nestjs/common';
import { Subscribable } from 'rxjs';
import { idScope, Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import { FairShares } from '../common/fair-shares';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DrainState } from '../ops/drain.service';
import { Metrics } from '../ops/metrics.service';
import { StoredMessage, titleFrom } from '../threads/message-format';
import { AguiEvent } from '../protocol/agui-events';
import { RunAgentInputDto } from '../protocol/run-agent-input.dto';
import { RunView } from './dto/run-view.dto';
import { isActiveStatus } from './storage/run.entity';
import { FrontendToolBroker } from './tools/frontend-tools.broker';
import { LiveRuns } from './engine/live-runs';
import { MastraRunner } from './engine/mastra-runner';
import { Carried, RunDeps, RunExecution } from './engine/run-execution';
import { PipelineDeps, runEvents$ } from './engine/run-pipeline';
import { HandedRun, LapsedRuns } from './durable/lapsed-runs';
import { RunStreams } from './stream/run-streams.service';
import { Wakes } from './durable/wakes';
import { PreparedRun, RunPreparer } from './engine/run-preparer';
import { Claimed, ClaimRun, ConversationStore } from './storage/conversation.store';
import { RunLeases } from './engine/run-leases';
import { BusyThreads } from './engine/busy-threads';
import { RunsRepository } from './storage/runs.repository';
import { ToolCallsRepository } from './storage/tool-calls.repository';
import { AnsweredInterrupt, InterruptsRepository } from './storage/interrupts.repository';

/**
 * How long a claim of a busy thread waits for the run held here to end: a client that stopped a run
 * and sends the next message at once can be heard before its old run hears the disconnect.
 */
const BUSY_THREAD_WAIT_MS = 2_000;
/** Without a run of the thread here, the claim is tried once more this much later. */
const BUSY_THREAD_RETRY_MS = 50;

/** A run that passed every check and was claimed: its events, and how it ends when nobody reads it. */
export type StartedRun = {
  /**
   * For one reader (its RunLog), subscribing starts the run. Never errors: every failure becomes
   * RUN_ERROR, after which it completes. Unsubscribing stops the run.
   */
  events$: Subscribable<AguiEvent>;
  /** How long the run goes on once its last reader left (forwardedProps.disconnectGraceMs or the default). */
  disconnectGraceMs: number;
  /** Stops the run as its client having left (RUN_ERROR CANCELLED still goes to the events). */
  abandon: () => void;
  /** Not part of a stored thread (no memory named): no thread stream shows it. */
  stateless: boolean;
};

/** Starts runs: refuses what can be refused before streaming, records the run, returns its events. */
@Injectable()
export class RunsService {
  private readonly log = new Logger(RunsService.name);
  private readonly deps: RunDeps;
  private readonly pipelineDeps: PipelineDeps;
  /** TOKEN_BUDGET_PER_OWNER and its window: an owner's own budget (owner_quotas) overrides it in the claim. */
  private readonly budget: { tokens: number | null; windowMs: number };

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly preparer: RunPreparer,
    private readonly runner: MastraRunner,
    private readonly live: LiveRuns,
    private readonly runs: RunsRepository,
    private readonly toolCalls: ToolCallsRepository,
    private readonly broker: FrontendToolBroker,
    private readonly conversations: ConversationStore,
    private readonly leases: RunLeases,
    private readonly drain: DrainState,
    private readonly metrics: Metrics,
    private readonly shares: FairShares,
    private readonly interrupts: InterruptsRepository,
    private readonly busyThreads: BusyThreads,
    streams: RunStreams,
    lapsed: LapsedRuns,
    private readonly wakes: Wakes,
  ) {
    this.budget = { tokens: config.budgets.tokens ?? null, windowMs: config.budgets.windowMs };
    const park = async (run: HandedRun, toolCallId: string, remainingMs: number) => {
      // Its readers here follow storage; what its log framed is stored before the run is parked.
      streams.handOver(run.id);
      await streams.flush();
      if (await lapsed.park(run, toolCallId, remainingMs))
        this.log.log(`run ${run.id}: parked, waiting for the result of tool call ${toolCallId}`);
    };
    this.pipelineDeps = {
      runner,
      live,
      log: this.log,
      park: (run, toolCallId, remainingMs) =>
        // Not parked: its lease lapses, and the reaper continues it (the step runs again).
        void park(run, toolCallId, remainingMs).catch((err: Error) =>
          this.log.warn(`run ${run.id}: parking failed: ${err.message}`),
        ),
    };
    this.deps = {
      conversations,
      interrupts,
      approvalTtlMs: config.approvalTtlMs,
      leases,
      toolCalls,
      broker,
      frontendToolTimeoutMs: config.frontendToolTimeoutMs,
      parkAfterMs: config.runParkAfterMs,
      metrics,
      log: this.log,
    };
  }

  /**
   * Everything that can be refused is refused here, before any byte is streamed. The events
   * never error: every failure becomes RUN_ERROR, after which it completes. Unsubscribing means the
   * client left: the run stops (CANCELLED) and is still recorded. `clientGone` aborts when the client
   * disconnects: if it did while the run was being claimed, the run is recorded `cancelled` without
   * starting, and there is no stream (undefined).
   */
  async start(
    input: RunAgentInputDto,
    principal: Principal,
    clientGone?: AbortSignal,
    address?: string,
  ): Promise<StartedRun | undefined> {
    if (this.drain.isDraining) throw new DomainError('SHUTTING_DOWN', 'The service is shutting down; retry');
    const { run: prepared, incoming } = this.preparer.prepare(input, principal);
    // Answers to interrupts are checked before anything is claimed: a wrong one is a 4xx, never a stream.
    const resumed = prepared.resume
      ? await this.interrupts.check(prepared.resume, principal.resourceId, prepared.threadId)
      : [];
    // Held until the run's end is recorded, whether a reader is there or not (a grace or a tool wait).
    const share = this.shares.takeRun(principal.resourceId, address);
    try {
      const started = await this.claimAndStart(
        input,
        principal,
        prepared,
        incoming,
        resumed,
        share,
        clientGone,
      );
      if (!started) share();
      return started;
    } catch (err) {
      share();
      throw err;
    }
  }

  private async claimAndStart(
    input: RunAgentInputDto,
    principal: Principal,
    prepared: PreparedRun,
    incoming: StoredMessage[],
    resumed: AnsweredInterrupt[],
    share: () => void,
    clientGone?: AbortSignal,
  ): Promise<StartedRun | undefined> {
    const claimed = await this.claimWaiting(prepared, clientGone, {
      threadId: input.threadId,
      runId: input.runId,
      resourceId: principal.resourceId,
      agentId: prepared.agent.definition.id,
      leaseMs: this.leases.leaseMs,
      // Untitled when a model names it: the run's own (generateTitle) or the agent's Memory.
      title:
        prepared.generateTitle || prepared.readOnly || prepared.agent.titlesThreads
          ? undefined
          : titleFrom(incoming),
      incoming,
      // An agent with a Memory of its own recalls the thread's history itself: it gets only what is new.
      lastMessages: prepared.agent.ownMemory ? 0 : prepared.lastMessages,
      readOnly: prepared.readOnly,
      memory: prepared.memory,
      budget: this.budget,
      input: {
        request: input,
        principal: {
          resourceId: principal.resourceId,
          admin: principal.admin,
          ...(principal.claims ? { claims: principal.claims } : {}),
        },
      },
    });
    prepared.stateless = claimed.stateless;
    prepared.budget = claimed.budget;
    const history =
      prepared.agent.ownMemory && !claimed.stateless
        ? await this.withTheirCalls(claimed.history, incoming, prepared)
        : claimed.history;
    if (clientGone?.aborted) {
      await this.cancelUnstarted(prepared);
      return undefined;
    }
    if (resumed.length) {
      const { principal: who, runId } = prepared;
      if (!(await this.interrupts.answer(resumed, who.resourceId, who.resourceId, runId))) {
        await this.cancelUnstarted(prepared, 'Its interrupts were answered by another run');
        throw new DomainError(
          'INTERRUPT_ALREADY_RESOLVED',
          'An interrupt was answered by another run meanwhile',
        );
      }
    }
    // Made here, not in the subscription, so that the closures below keep the run and not the history.
    const execution = new RunExecution(prepared, this.deps, history, resumed);
    const events$ = runEvents$(execution, this.pipelineDeps, share);
    const abandon = () => {
      if (execution.started && !execution.ended) execution.stop('CANCELLED', 'The client disconnected');
    };
    return { events$, disconnectGraceMs: prepared.disconnectGraceMs, abandon, stateless: claimed.stateless };
  }

  /**
   * What an agent with a Memory of its own is handed (only what is new to the thread), with the
   * assistant message that made each call a new tool message answers, before it: a run that ended at
   * frontend calls (`ag-ui`) left that message in io-bridge's thread but not in the agent's memory,
   * which keeps no call without its result, and a tool message without its call is dropped. It comes
   * from the client's messages, or from the thread when the client sent the tool message alone.
   */
  private async withTheirCalls(
    history: StoredMessage[],
    incoming: StoredMessage[],
    run: PreparedRun,
  ): Promise<StoredMessage[]> {
    const called = new Set(history.flatMap((m) => (m.toolCalls ?? []).map((c) => c.id)));
    const unmatched = history.filter((m) => m.role === 'tool' && m.toolCallId && !called.has(m.toolCallId));
    if (!unmatched.length) return history;
    const ids = unmatched.map((m) => m.toolCallId!);
    const makes = (m: StoredMessage) =>
      m.role === 'assistant' && !!m.toolCalls?.some((c) => ids.includes(c.id));
    const sent = incoming.filter(makes);
    const found = new Set(sent.flatMap((m) => m.toolCalls!.map((c) => c.id)));
    const stored = ids.some((id) => !found.has(id))
      ? await this.conversations.callersOf(run.threadId, run.principal.resourceId, ids)
      : [];
    const callers = [...sent, ...stored.filter((m) => !sent.some((s) => s.id === m.id))];
    const at = history.indexOf(unmatched[0]);
    return [...history.slice(0, at), ...callers, ...history.slice(at)];
  }

  /**
   * The claim; a busy thread whose run here is ending (its client just left) is claimed once it
   * ended. The end of a run elsewhere, or one that ended here a moment ago, is in flight: tried once
   * more after a moment. A request that asked to wait (`ifBusy` enqueue or interrupt) waits its turn.
   */
  private async claimWaiting(
    prepared: PreparedRun,
    clientGone: AbortSignal | undefined,
    claim: ClaimRun,
  ): Promise<Claimed> {
    try {
      return await this.conversations.claim(claim);
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'THREAD_BUSY')) throw err;
      if (prepared.ifBusy !== 'reject') {
        return this.busyThreads.claimWhenFree(
          prepared,
          prepared.ifBusy,
          (queueTicket) => this.conversations.claim({ ...claim, queueTicket }),
          clientGone,
        );
      }
      if (!(await this.live.ended(claim.threadId, BUSY_THREAD_WAIT_MS)))
        await new Promise((resolve) => setTimeout(resolve, BUSY_THREAD_RETRY_MS));
      return this.conversations.claim(claim);
    }
  }

  /**
   * A lapsed run this replica claimed (RunContinuations): it goes on from the steps an earlier
   * replica completed (`carried`, also in `history`), its steps named after `stepsBefore`; the
   * approvals its `resume` answered whose results no replica showed run (again) first.
   */
  continued(
    prepared: PreparedRun,
    history: StoredMessage[],
    carried: Carried,
    stepsBefore: number,
    resumed: AnsweredInterrupt[] = [],
  ): Subscribable<AguiEvent> {
    const execution = new RunExecution(prepared, this.deps, history, resumed, carried);
    return runEvents$(execution, this.pipelineDeps, () => undefined, { stepsBefore });
  }

  /** A run whose client left before its stream began: recorded at once, so its thread is free. */
  private async cancelUnstarted(run: PreparedRun, message = 'The client disconnected'): Promise<void> {
    const end = { status: 'cancelled', code: 'CANCELLED', message } as const;
    try {
      await this.conversations.endRun({
        runId: run.runId,
        attempt: run.attempt,
        threadId: run.threadId,
        resourceId: run.principal.resourceId,
        end,
        produced: [],
      });
    } catch (err) {
      // Not renewed, its lease lapses and the reaper frees the thread instead.
      this.log.warn(`run ${run.runId}: could not record its cancel: ${(err as Error).message}`);
    }
    this.log.log(`run ${run.runId}: the client left before its stream began; recorded cancelled`);
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
      ...(run.usage ? { usage: run.usage } : {}),
      ...(await this.interruptsOf(run.id, run.resourceId)),
    };
  }

  /** The run's open interrupts and the answers given to them (absent when none). */
  private async interruptsOf(
    runId: string,
    resourceId: string,
  ): Promise<Pick<RunView, 'interrupts' | 'approvals'>> {
    const { interrupts, approvals } = await this.interrupts.ofRun(runId, resourceId);
    return {
      ...(interrupts.length ? { interrupts } : {}),
      ...(approvals.length ? { approvals } : {}),
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
    // A parked run goes on here, now.
    if (stored === 'woke') this.wakes.request();
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
}
