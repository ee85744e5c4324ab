import type { Logger } from '@nestjs/common';
import type { RunFinishedOutcome } from '../../protocol/outcomes';
import type { TokenUsage } from '../../protocol/usage';
import type { StoredMessage } from '../../threads/message-format';
import type { ConversationStore } from '../storage/conversation.store';
import type { InterruptsRepository } from '../storage/interrupts.repository';
import type { Terminal } from './lifecycle-guard';
import { DATABASE_UNAVAILABLE, Ending, unrecorded } from './run-ending';
import type { PreparedRun } from './run-preparer';

/** What recording a run's end needs of the run. */
export type Recording = {
  run: PreparedRun;
  attempt: number;
  usage: TokenUsage[] | undefined;
  /** The messages the client was shown, to store with the end (none for a run that stores nothing). */
  produced: StoredMessage[];
  /** Its lease could not be renewed and may lapse before the write ends. */
  leaseMayLapse: boolean;
  deps: {
    conversations: ConversationStore;
    interrupts: InterruptsRepository;
    approvalTtlMs: number;
    log: Logger;
  };
};

/**
 * Records a run's final status and the messages the client was shown (what was open closed first,
 * by the caller), before the terminal event goes out, so a client that sees it can rely on both;
 * returns the terminal event's content. Approvals the run stopped at become interrupts first. A
 * write that fails ends the run RUN_ERROR; one that may outlast the lease ends it at once
 * (SERVICE_UNAVAILABLE) and goes on by itself, so no other instance takes the thread while it streams.
 */
export async function recordEnding(ending: Ending, r: Recording): Promise<Terminal> {
  const { run, deps } = r;
  const { runId, threadId } = run;
  const resourceId = run.principal.resourceId;
  let terminal = ending.terminal;
  let outcome: RunFinishedOutcome | undefined;
  let end = ending.end;
  if (ending.approvals) {
    try {
      const interrupts = await deps.interrupts.create(
        { runId, threadId, resourceId },
        ending.approvals,
        deps.approvalTtlMs,
      );
      outcome = { type: 'interrupt', interrupts };
    } catch (err) {
      deps.log.error(`run ${runId}: could not record its interrupts: ${(err as Error).message}`);
      terminal = unrecorded(err);
      end = { status: 'error', ...terminal };
    }
  } else if (ending.pending) outcome = { type: 'success', pendingToolCallIds: ending.pending };
  const written = deps.conversations
    .endRun({
      runId,
      attempt: r.attempt,
      threadId,
      resourceId,
      end: r.usage ? { ...end, usage: r.usage } : end,
      produced: r.produced,
    })
    .then(
      () => undefined,
      (err: Error) => {
        deps.log.error(`run ${runId}: could not record its end: ${err.message}`);
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
