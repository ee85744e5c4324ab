import { Injectable, OnModuleInit } from '@nestjs/common';
import { idScope, Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { PgNotifications } from '../../database/pg-notifications.service';
import { RunErrorCode } from '../../protocol/agui-events';
import { isActiveStatus } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';

/** A run on this instance, as the cancel route (or a thread's deletion) on any instance reaches it. */
export type Cancellable = {
  readonly threadId: string;
  readonly resourceId: string;
  /** False for a stateless run, which merely shares a thread's id. */
  readonly ofThread: boolean;
  stop(code: RunErrorCode, message: string): void;
};

/**
 * Routes cancels to the run they name, whichever instance holds it: the cancel route (and a busy
 * thread's `ifBusy: interrupt`) NOTIFYs the run's id, a thread's deletion NOTIFYs the thread; the
 * instance that tracks the run stops it (docs/protocol.md#routes).
 */
@Injectable()
export class RunCancels implements OnModuleInit {
  private readonly activeRuns = new Map<string, Cancellable>();

  constructor(
    private readonly notifications: PgNotifications,
    private readonly runs: RunsRepository,
  ) {}

  onModuleInit(): void {
    this.notifications.on('io_bridge_run_cancel', (runId) =>
      this.activeRuns.get(runId)?.stop('CANCELLED', 'The run was cancelled'),
    );
    this.notifications.on('io_bridge_thread_cancel', (payload) => this.cancelThread(payload));
  }

  /** Makes a run on this instance reachable by the cancel route of any instance, until untracked. */
  track(runId: string, run: Cancellable): void {
    this.activeRuns.set(runId, run);
  }

  untrack(runId: string): void {
    this.activeRuns.delete(runId);
  }

  /** `POST /runs/:runId/cancel`: the caller's active run stops, on whichever instance holds it. */
  async cancel(runId: string, principal: Principal): Promise<void> {
    const run = await this.runs.findOne(runId, idScope(principal, 'write'));
    if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
    if (!isActiveStatus(run.status)) throw new DomainError('RUN_NOT_ACTIVE', `Run '${runId}' is not active`);
    await this.stop(runId);
  }

  /** Stops the run on whichever instance holds it. */
  async stop(runId: string): Promise<void> {
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
}
