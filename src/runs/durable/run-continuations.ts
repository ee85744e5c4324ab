import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { Principal } from '../../auth/principal';
import { AguiEvent } from '../../protocol/agui-events';
import { StoredMessage } from '../../threads/message-format';
import { RunAgentInputDto } from '../../protocol/run-agent-input.dto';
import { RunPreparer } from '../prepare/run-preparer';
import { RunFactory } from '../engine/run-factory';
import { RunEventsRepository } from '../storage/run-events.repository';
import { ConversationStore } from '../storage/conversation.store';
import { ToolCallsRepository } from '../storage/tool-calls.repository';
import { AnsweredInterrupt, InterruptsRepository } from '../storage/interrupts.repository';
import { ResumeEntry } from '../../protocol/outcomes';
import { frame } from '../events/frames';
import { RunStreams } from '../stream/run-streams.service';
import { LapsedRun, LapsedRunsRepository } from '../storage/lapsed-runs.repository';
import { readStoredLog, StoredLog } from '../storage/stored-log';

/**
 * Continues a lapsed run this replica claimed (RunReaper), under the same runId, from its last
 * completed step, its log going on with the next id (docs/durable-runs.md#continuing-a-run-on-another-replica).
 */
@Injectable()
export class RunContinuations {
  private readonly log = new Logger(RunContinuations.name);

  constructor(
    private readonly lapsed: LapsedRunsRepository,
    private readonly preparer: RunPreparer,
    private readonly factory: RunFactory,
    private readonly streams: RunStreams,
    private readonly events: RunEventsRepository,
    private readonly toolCalls: ToolCallsRepository,
    private readonly conversations: ConversationStore,
    private readonly interrupts: InterruptsRepository,
  ) {}

  /**
   * Continues a run claimed here: its request prepared again, the history it saw plus the steps
   * completed, its log read to its end and what was left open closed; the step that was cut short
   * runs again. A run that cannot be prepared any more is left: its lease lapses again, and once out
   * of attempts it ends INTERRUPTED.
   */
  async continue(run: LapsedRun): Promise<void> {
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
      // An agent with a memory of its own recalls the thread itself (the run's messages its claim stored
      // among them): it gets the messages of the completed steps.
      const recalled = prepared.agent.ownMemory && !run.stateless && !prepared.readOnly;
      const thread =
        run.stateless || recalled
          ? []
          : await this.lapsed.history(run.threadId, run.resourceId, prepared.lastMessages);
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
      if (run.parked && !(await this.wake(run, run.parked, carried, closing, log))) return;
      const resumed = await this.stillResumed(run, carried, log.results);
      const history = [...thread, ...(recalled ? [] : incoming.filter((m) => !known.has(m.id))), ...carried];
      const spent = run.usage ? { usage: run.usage } : {};
      const events$ = this.factory.continued(
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
    log: StoredLog,
  ): Promise<boolean> {
    const result = await this.toolCalls.take(run.id, run.resourceId, toolCallId);
    if (result) {
      const content = result.error !== undefined ? { error: result.error } : result.content;
      // Through the lifecycle, as every event: it gives the result its message id and wire text.
      log.lifecycle.push({ type: 'TOOL_CALL_RESULT', toolCallId, messageId: randomUUID(), content });
      const shown = closing.findLast((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === toolCallId);
      if (shown?.type === 'TOOL_CALL_RESULT')
        carried.push({ id: shown.messageId, role: 'tool', toolCallId, content: shown.content });
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
    log.lifecycle.fail(end.code, end.message);
    let seq = log.last;
    const frames = closing.map((event) => frame(++seq, event)).join('');
    await this.events.append(
      [{ runId: run.id, attempt: run.attempt, first: log.last + 1, last: seq, frames, terminal: true }],
      [run.id],
    );
    this.log.log(`run ${run.id}: parked past its tool's timeout; ended TOOL_RESULT_TIMEOUT`);
    return false;
  }
}
