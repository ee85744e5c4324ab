import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import type { RunFinishedOutcome } from '../../protocol/outcomes';
import type { TokenUsage } from '../../protocol/usage';
import type { StoredMessage } from '../../threads/message-format';
import { ConversationStore } from '../storage/conversation.store';
import { InterruptsRepository } from '../storage/interrupts.repository';
import { RunsRepository } from '../storage/runs.repository';
import { ThreadsRepository } from '../../threads/threads.repository';
import type { LogTail } from '../storage/run-events.repository';
import type { Terminal } from '../events/lifecycle-guard';
import { DATABASE_UNAVAILABLE, Ending, unrecorded } from './run-ending';
import type { PreparedRun } from '../prepare/run-preparer';
import { generateTitle } from './thread-title';

/** What recording a run's end needs of the run. */
export type Recording = {
  run: PreparedRun;
  attempt: number;
  usage: TokenUsage[] | undefined;
  /** The messages the client was shown, to store with the end (none for a run that stores nothing). */
  produced: StoredMessage[];
  /** Its lease could not be renewed and may lapse before the write ends. */
  leaseMayLapse: boolean;
  /** The events its log has not stored, stored with the end. */
  tail?: LogTail;
};

/**
 * Records what a run's end leaves behind: its status and messages, its interrupts, and the title
 * asked for (generateTitle), after the run, off the stream's path.
 */
@Injectable()
export class RunRecorder {
  private readonly log = new Logger(RunRecorder.name);
  private readonly approvalTtlMs: number;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly conversations: ConversationStore,
    private readonly interrupts: InterruptsRepository,
    private readonly runs: RunsRepository,
    private readonly threads: ThreadsRepository,
  ) {
    this.approvalTtlMs = config.approvalTtlMs;
  }

  /** memoryOptions.generateTitle, once the run finished (generateTitle). */
  title(run: PreparedRun, usage: readonly TokenUsage[] | undefined): void {
    void generateTitle(run, { runs: this.runs, threads: this.threads }, this.log, usage);
  }

  /**
   * Records a run's final status and the messages the client was shown (what was open closed first,
   * by the caller), before the terminal event goes out, so a client that sees it can rely on both;
   * returns the terminal event's content. Approvals the run stopped at become interrupts first. A
   * write that fails ends the run RUN_ERROR; one that may outlast the lease ends it at once
   * (SERVICE_UNAVAILABLE) and goes on by itself, so no other instance takes the thread while it streams.
   */
  async record(ending: Ending, r: Recording): Promise<Terminal> {
    const { run } = r;
    const { runId, threadId } = run;
    const resourceId = run.principal.resourceId;
    let terminal = ending.terminal;
    let outcome: RunFinishedOutcome | undefined;
    let end = ending.end;
    if (ending.approvals) {
      try {
        const interrupts = await this.interrupts.create(
          { runId, threadId, resourceId },
          ending.approvals,
          this.approvalTtlMs,
        );
        outcome = { type: 'interrupt', interrupts };
      } catch (err) {
        this.log.error(`run ${runId}: could not record its interrupts: ${(err as Error).message}`);
        terminal = unrecorded(err);
        end = { status: 'error', ...terminal };
      }
    } else if (ending.pending) outcome = { type: 'success', pendingToolCallIds: ending.pending };
    const written = this.conversations
      .endRun({
        runId,
        attempt: r.attempt,
        threadId,
        resourceId,
        end: r.usage ? { ...end, usage: r.usage } : end,
        produced: r.produced,
        tail: r.tail,
      })
      .then(
        () => undefined,
        (err: Error) => {
          this.log.error(`run ${runId}: could not record its end: ${err.message}`);
          return err;
        },
      );
    if (r.leaseMayLapse) {
      // The lease may lapse before the driver's timeouts end the write, and another instance take the
      // thread: the run ends now (RUN_ERROR SERVICE_UNAVAILABLE), the write goes on by itself.
      terminal ??= { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE };
    } else {
      const failed = await written;
      if (failed) terminal ??= unrecorded(failed);
    }
    // AG-UI 1.0 usage reaches only a request that declared 1.x; the record keeps it for every client.
    const usage = run.agUi1 && r.usage ? { usage: r.usage } : {};
    if (terminal) return { ...terminal, ...usage };
    // AG-UI 1.0 outcomes reach only a request that declared 1.x; the record keeps the interrupts for every client.
    if (run.agUi1) outcome ??= { type: 'success' };
    return { result: ending.result, ...(run.agUi1 && outcome ? { outcome } : {}), ...usage };
  }
}
