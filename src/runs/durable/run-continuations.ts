import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import { Principal } from '../../auth/principal';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { DrainState } from '../../ops/drain.service';
import { AguiEvent } from '../../protocol/agui-events';
import { StoredMessage } from '../../threads/message-format';
import { RunAgentInputDto } from '../../protocol/run-agent-input.dto';
import { LiveRuns } from '../engine/live-runs';
import { RunPreparer } from '../engine/run-preparer';
import { RunsService } from '../runs.service';
import { RunEventsRepository } from '../storage/run-events.repository';
import { ConversationStore } from '../storage/conversation.store';
import { ToolCallsRepository } from '../storage/tool-calls.repository';
import { AnsweredInterrupt, InterruptsRepository } from '../storage/interrupts.repository';
import { ResumeEntry } from '../../protocol/outcomes';
import { frame } from '../stream/run-log';
import { RunStreams } from '../stream/run-streams.service';
import { HANDED_OVER_CHANNEL, LapsedRun, LapsedRuns } from './lapsed-runs';
import { readStoredLog, StoredLog } from './stored-log';
import { Wakes } from './wakes';

/** A reap announced (runs handed over) waits this long for more announcements of the same drain. */
const ANNOUNCED_REAP_MS = 20;

/**
 * Runs outlive their replica. The reaper: runs whose lease lapsed (their replica died, or handed
 * them over) are claimed and continued here from their last completed step, under the same runId,
 * their log going on with the next id; runs out of attempts end INTERRUPTED (LapsedRuns). It runs at
 * start-up, when the next lease lapses (at least every half lease), at once when a draining
 * replica says it handed runs over, and at once when a result posted here woke a parked run. The drain's side: handing this replica's runs over.
 */
@Injectable()
export class RunContinuations implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunContinuations.name);
  private timer: NodeJS.Timeout | undefined;
  private reaping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lapsed: LapsedRuns,
    private readonly preparer: RunPreparer,
    private readonly runs: RunsService,
    private readonly live: LiveRuns,
    private readonly streams: RunStreams,
    private readonly events: RunEventsRepository,
    private readonly notifications: PgNotifications,
    private readonly drain: DrainState,
    private readonly toolCalls: ToolCallsRepository,
    private readonly conversations: ConversationStore,
    private readonly wakes: Wakes,
    private readonly interrupts: InterruptsRepository,
  ) {}

  onModuleInit(): void {
    this.notifications.on(HANDED_OVER_CHANNEL, () => this.schedule(ANNOUNCED_REAP_MS));
    this.wakes.listen(() => this.schedule(0));
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reap();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * Hands every run of this replica that is not ending over to the others (SIGTERM): their engines
   * stop without an end, their logs are stored, their leases lapse now, and the others are told.
   * Their readers here follow the log (RunStreams relays). Returns how many were handed over.
   */
  async handOverAll(): Promise<number> {
    const handed = this.live.handOverAll();
    if (!handed.length) return 0;
    for (const run of handed) this.streams.handOver(run.id);
    await this.streams.flush();
    const ids = await this.lapsed.handOver(handed);
    this.log.log(`handed ${ids.length} run(s) over to the other replicas`);
    return ids.length;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reap(), Math.max(0, ms));
    this.timer.unref();
  }

  /** One reap at a time; one asked for meanwhile runs right after. */
  private async reap(): Promise<void> {
    if (this.reaping) {
      this.again = true;
      return this.reaping;
    }
    this.reaping = this.reapOnce();
    try {
      await this.reaping;
    } finally {
      this.reaping = undefined;
    }
    if (this.again) {
      this.again = false;
      return this.reap();
    }
  }

  private async reapOnce(): Promise<void> {
    const leaseMs = this.config.runLeaseMs;
    let next = leaseMs / 2;
    try {
      // A draining replica takes nothing on; it still ends what cannot be continued.
      const reaped = await this.lapsed.reapLapsed({ continue: !this.drain.isDraining, leaseMs });
      if (reaped.ended.length)
        this.log.warn(
          `ended ${reaped.ended.length} run(s) of stopped instances INTERRUPTED: ${reaped.ended.join(', ')}`,
        );
      for (const run of reaped.continued) await this.continue(run);
      // Right after the next lease lapses, so a dead replica's runs go on within about a lease.
      if (reaped.nextLapseMs !== undefined) next = Math.min(next, reaped.nextLapseMs + 10);
    } catch (err) {
      // A reap in flight while the application closes loses its connection: nothing to report.
      if (!this.stopped) this.log.warn(`reaping lapsed runs failed: ${(err as Error).message}`);
    }
    if (!this.drain.isDraining) this.schedule(next);
  }

  /**
   * Continues a run claimed here: its request prepared again, the history it saw plus the steps
   * completed, its log read to its end and what was left open closed; the step that was cut short
   * runs again. A run that cannot be prepared any more is left: its lease lapses again, and once out
   * of attempts it ends INTERRUPTED.
   */
  private async continue(run: LapsedRun): Promise<void> {
    try {
      const stored = run.input.request;
      const request = {
        ...stored,
        messages: stored.messages ?? [],
        resume: undefined,
      } as unknown as RunAgentInputDto;
      const principal: Principal = { ...run.input.principal };
      const { run: prepared, incoming } = this.preparer.prepare(request, principal);
      prepared.stateless = run.stateless;
      prepared.attempt = run.attempt;
      if (run.input.budget) prepared.budget = run.input.budget;
      const carried = run.progress ?? [];
      // An agent with a memory of its own recalls the thread itself: it gets the run's own messages.
      const recalled = prepared.agent.ownMemory && !run.stateless && !prepared.readOnly;
      const thread = run.stateless
        ? []
        : await this.lapsed.history(
            run.threadId,
            run.resourceId,
            prepared.lastMessages,
            recalled ? run.id : undefined,
          );
      const known = new Set(thread.map((m) => m.id));
      const closing: AguiEvent[] = [];
      const log = await readStoredLog(run, this.events, (event) => closing.push(event));
      if (log.terminal) {
        this.log.warn(`run ${run.id}: its log is complete though the run is active; not continued`);
        return;
      }
      // A log cut before its first event (the claim's replica died at once) begins here.
      log.lifecycle.start();
      log.lifecycle.closeOpen();
      if (run.parked && !(await this.wake(run, run.parked, carried, closing, log.last))) return;
      const resumed = await this.stillResumed(run, carried, log.results);
      const history = [...thread, ...(recalled ? [] : incoming.filter((m) => !known.has(m.id))), ...carried];
      const spent = run.usage ? { usage: run.usage } : {};
      const events$ = this.runs.continued(
        prepared,
        history,
        { messages: carried, ...spent },
        log.steps,
        resumed,
      );
      this.streams.adopt(run.id, run.attempt, events$, log.last, closing);
      this.log.log(
        `run ${run.id}: continued here (attempt ${run.attempt}) after event ${log.last}, ${carried.length} message(s) of completed steps kept`,
      );
    } catch (err) {
      this.log.error(`run ${run.id}: could not be continued: ${(err as Error).message}`);
    }
  }

  /**
   * The approvals the run's `resume` answered, as its continuation carries them: a result its log
   * showed joins the carried messages (unless a completed step holds it already); the others run again.
   */
  private async stillResumed(
    run: LapsedRun,
    carried: StoredMessage[],
    shown: StoredLog['results'],
  ): Promise<AnsweredInterrupt[]> {
    const entries = run.input.request.resume as ResumeEntry[] | undefined;
    if (!entries?.length) return [];
    const answered = await this.interrupts.answeredIn(run.id, run.resourceId, entries);
    const kept = new Set(carried.map((m) => m.toolCallId));
    return answered.filter(({ toolCallId }) => {
      if (kept.has(toolCallId)) return false;
      const result = shown.get(toolCallId);
      if (result) carried.push({ id: result.messageId, role: 'tool', toolCallId, content: result.content });
      return !result;
    });
  }

  /**
   * A parked run claimed here: its tool's result goes after what its log showed (and into what it
   * stores), and the model goes on from it. Without a result its lease lapsed at the tool's timeout:
   * it ends RUN_ERROR TOOL_RESULT_TIMEOUT (recorded, then its log ended). False when it ended.
   */
  private async wake(
    run: LapsedRun,
    toolCallId: string,
    carried: StoredMessage[],
    closing: AguiEvent[],
    last: number,
  ): Promise<boolean> {
    const result = await this.toolCalls.take(run.id, run.resourceId, toolCallId);
    if (result) {
      const content =
        result.error !== undefined ? JSON.stringify({ error: result.error }) : stringify(result.content);
      const messageId = randomUUID();
      carried.push({ id: messageId, role: 'tool', toolCallId, content });
      closing.push({
        type: 'TOOL_CALL_RESULT',
        timestamp: Date.now(),
        messageId,
        toolCallId,
        content,
        role: 'tool',
      });
      return true;
    }
    const end = {
      code: 'TOOL_RESULT_TIMEOUT',
      message: `No result for tool call ${toolCallId} in time`,
    } as const;
    await this.conversations.endRun({
      runId: run.id,
      threadId: run.threadId,
      resourceId: run.resourceId,
      attempt: run.attempt,
      end: { status: 'error', ...end, ...(run.usage ? { usage: run.usage } : {}) },
      produced: run.stateless ? [] : carried,
    });
    closing.push({ type: 'RUN_ERROR', timestamp: Date.now(), ...end });
    let seq = last;
    const frames = closing.map((event) => frame(++seq, event)).join('');
    await this.events.append(
      [{ runId: run.id, attempt: run.attempt, first: last + 1, last: seq, frames, terminal: true }],
      [run.id],
    );
    this.log.log(`run ${run.id}: parked past its tool's timeout; ended TOOL_RESULT_TIMEOUT`);
    return false;
  }
}

/** A tool result as the wire carries it: text as is, anything else as JSON. */
const stringify = (content: unknown): string =>
  typeof content === 'string' ? content : (JSON.stringify(content ?? null) ?? 'null');
