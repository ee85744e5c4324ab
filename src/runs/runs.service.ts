import { Inject, Injectable, Logger } from '@nestjs/common';
import { Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import { FairShares } from '../common/fair-shares';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DrainState } from '../ops/drain.service';
import { Metrics } from '../ops/metrics.service';
import { StoredMessage, titleFrom } from '../threads/message-format';
import { RunAgentInputDto } from '../protocol/run-agent-input.dto';
import { LiveRuns } from './engine/live-runs';
import { RunFactory } from './engine/run-factory';
import { PreparedRun, RunPreparer } from './prepare/run-preparer';
import { Claimed, ClaimRun, ConversationStore } from './storage/conversation.store';
import { BusyThreads } from './engine/busy-threads';
import { AnsweredInterrupt, InterruptsRepository } from './storage/interrupts.repository';
import type { OpenedRun } from './stream/run-streams.service';

/**
 * How long a claim of a busy thread waits for the run held here to end: a client that stopped a run
 * and sends the next message at once can be heard before its old run hears the disconnect.
 */
const BUSY_THREAD_WAIT_MS = 2_000;
/** Without a run of the thread here, the claim is tried once more this much later. */
const BUSY_THREAD_RETRY_MS = 50;

/**
 * A run that passed every check and was claimed: its events (for one reader: subscribing starts the
 * run; never an error, every failure becomes RUN_ERROR; unsubscribing stops it), its log as the
 * claim began it, and how it ends when nobody reads it.
 */
export type StartedRun = OpenedRun & {
  /** Not part of a stored thread (no memory named): no thread stream shows it. */
  stateless: boolean;
};

/** Starts runs: refuses what can be refused before streaming, records the run, returns its events. */
@Injectable()
export class RunsService {
  private readonly log = new Logger(RunsService.name);
  /** TOKEN_BUDGET_PER_OWNER and its window: an owner's own budget (owner_quotas) overrides it in the claim. */
  private readonly budget: { tokens: number | null; windowMs: number };
  private readonly leaseMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly preparer: RunPreparer,
    private readonly factory: RunFactory,
    private readonly live: LiveRuns,
    private readonly conversations: ConversationStore,
    private readonly interrupts: InterruptsRepository,
    private readonly busyThreads: BusyThreads,
    private readonly drain: DrainState,
    private readonly shares: FairShares,
    private readonly metrics: Metrics,
  ) {
    this.budget = { tokens: config.budgets.tokens ?? null, windowMs: config.budgets.windowMs };
    this.leaseMs = config.runLeaseMs;
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
      leaseMs: this.leaseMs,
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
    // What the claim stored of them (a row each; a tool result joins its call's row).
    if (prepared.agent.ownMemory && !prepared.readOnly)
      prepared.storedRows = claimed.history.filter((m) => m.role !== 'tool').length;
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
    const { execution, events$ } = this.factory.make(prepared, history, resumed, share);
    const abandon = () => {
      if (execution.started && !execution.ended) execution.stop('CANCELLED', 'The client disconnected');
    };
    return {
      events$,
      log: claimed.log,
      disconnectGraceMs: prepared.disconnectGraceMs,
      abandon,
      stateless: claimed.stateless,
    };
  }

  /**
   * What an agent with a Memory of its own is handed (only what is new to the thread), with the
   * assistant message that made each call a new tool message answers, before it: the memory recalls
   * no call without its result, and a tool message without its call is dropped, so the two go in as
   * the row the thread keeps them in (by its id: the memory takes it once). The caller comes from the
   * client's messages, or from the thread when the client sent the tool message alone.
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
}
