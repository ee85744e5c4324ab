import { Injectable, OnModuleInit } from '@nestjs/common';
import { PgNotifications } from '../../database/pg-notifications.service';
import { RunErrorCode } from '../../protocol/agui-events';
import { ToolCallsRepository, ToolResult } from '../storage/tool-calls.repository';

/** A run on this instance, as the cancel route (or a thread's deletion) on any instance reaches it. */
type Cancellable = {
  readonly threadId: string;
  readonly resourceId: string;
  /** False for a stateless run, which merely shares a thread's id. */
  readonly ofThread: boolean;
  stop(code: RunErrorCode, message: string): void;
};

/**
 * Connects the runs this instance holds with results and cancels posted to any instance: the
 * posting instance writes the table and NOTIFYs; the holding instance takes the row. A result posted
 * before the run starts waiting (even before it registers the call) is already in the table when the
 * wait begins, so it is not lost.
 */
@Injectable()
export class FrontendToolBroker implements OnModuleInit {
  private readonly waiters = new Map<string, () => void>();
  private readonly activeRuns = new Map<string, Cancellable>();

  constructor(
    private readonly notifications: PgNotifications,
    private readonly toolCalls: ToolCallsRepository,
  ) {}

  onModuleInit(): void {
    this.notifications.on('io_bridge_tool_result', (key) => this.waiters.get(key)?.());
    this.notifications.on('io_bridge_run_cancel', (runId) =>
      this.activeRuns.get(runId)?.stop('CANCELLED', 'The run was cancelled'),
    );
    this.notifications.on('io_bridge_thread_cancel', (payload) => this.cancelThread(payload));
    this.notifications.onReconnect(() => this.waiters.forEach((check) => check()));
  }

  /** Makes a run on this instance reachable by the cancel route of any instance, until untracked. */
  track(runId: string, run: Cancellable): void {
    this.activeRuns.set(runId, run);
  }

  untrack(runId: string): void {
    this.activeRuns.delete(runId);
  }

  async requestCancel(runId: string): Promise<void> {
    await this.notifications.notify('io_bridge_run_cancel', runId);
  }

  /** A deleted thread's run stops (the threads feature NOTIFYs `{threadId, resourceId}` before it deletes). */
  private cancelThread(payload: string): void {
    let deleted: { threadId?: unknown; resourceId?: unknown };
    try {
      deleted = JSON.parse(payload) as typeof deleted;
    } catch {
      return;
    }
    for (const run of this.activeRuns.values()) {
      if (run.ofThread && run.threadId === deleted.threadId && run.resourceId === deleted.resourceId)
        run.stop('CANCELLED', 'The run was cancelled');
    }
  }

  /** Resolves with the posted result; rejects with the signal's reason when the run stops first. */
  wait(runId: string, resourceId: string, toolCallId: string, signal: AbortSignal): Promise<ToolResult> {
    const key = `${runId} ${toolCallId}`;
    return new Promise<ToolResult>((resolve, reject) => {
      let settled = false;
      const settle = (done: () => void) => {
        if (settled) return;
        settled = true;
        this.waiters.delete(key);
        signal.removeEventListener('abort', onAbort);
        done();
      };
      const onAbort = () => settle(() => reject(signal.reason as Error));
      const check = () =>
        void this.toolCalls.take(runId, resourceId, toolCallId).then(
          (result) => result && settle(() => resolve(result)),
          (err: Error) => settle(() => reject(err)),
        );
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(key, check);
      check();
    });
  }
}
