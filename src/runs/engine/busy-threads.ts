import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DomainError } from '../../common/errors';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { announcedEnd, RUN_EVENTS_CHANNEL } from '../storage/run-events.repository';
import { RunQueueRepository } from '../storage/run-queue.repository';
import { RunCancels } from './run-cancels';
import type { IfBusy } from '../prepare/forwarded-props';

/** How long a place in a thread's queue lasts unless its replica renews it (each look does). */
const PLACE_TTL_MS = 10_000;
/**
 * A waiting request looks again this often when nothing told it the thread's run ended (a run
 * reaped after its replica died, a request before it that left the queue).
 */
const LOOK_MS = 1_000;

/**
 * Requests that wait for their busy thread (docs/protocol.md#busy-threads): `enqueue` takes a place in the thread's
 * queue (`run_queue`, shared by every replica) and starts when the thread is free and it is first;
 * `interrupt` also cancels the thread's run, through the cancel route's path on whatever replica it
 * runs (RUN_ERROR CANCELLED), and goes before those that only enqueued. A wait is bounded by
 * RUN_QUEUE_WAIT_MS (then 409 THREAD_BUSY); a client that leaves gives its place up. The end of the
 * run waited for is heard from its terminal event's announcement (every replica hears them).
 */
@Injectable()
export class BusyThreads implements OnModuleInit {
  private readonly log = new Logger(BusyThreads.name);
  /** Waiting requests here: the run each waits for → its wake-ups. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly queue: RunQueueRepository,
    private readonly cancels: RunCancels,
    private readonly notifications: PgNotifications,
  ) {}

  onModuleInit(): void {
    this.notifications.on(RUN_EVENTS_CHANNEL, (payload) => {
      if (!this.waiting.size) return;
      const ended = announcedEnd(payload);
      if (ended) this.waiting.get(ended)?.forEach((wake) => wake());
    });
  }

  /**
   * Waits for the thread by `policy` and claims it with `claim` once free and first (`claim` gets the
   * place, so that its statement checks no place is before it); `gone` aborts when the client
   * leaves. Throws THREAD_BUSY past RUN_QUEUE_WAIT_MS.
   */
  async claimWhenFree<T>(
    run: { threadId: string; runId: string },
    policy: Exclude<IfBusy, 'reject'>,
    claim: (ticket: string) => Promise<T>,
    gone?: AbortSignal,
  ): Promise<T> {
    const { threadId } = run;
    const waitMs = this.config.runQueueWaitMs;
    const deadline = Date.now() + waitMs;
    const ticket = await this.queue.enqueue(threadId, run.runId, policy === 'interrupt', PLACE_TTL_MS);
    let cancelled: string | undefined;
    try {
      for (;;) {
        if (gone?.aborted)
          throw new DomainError('THREAD_BUSY', 'The client left while waiting for the thread');
        const place = await this.queue.look(ticket, threadId, PLACE_TTL_MS);
        if (place.first && (!place.active || place.lapsed)) {
          try {
            return await claim(ticket);
          } catch (err) {
            // Another request took the thread meanwhile: the next look finds its run to wait for.
            if (!(err instanceof DomainError && err.code === 'THREAD_BUSY')) throw err;
          }
        }
        if (Date.now() >= deadline) {
          throw new DomainError(
            'THREAD_BUSY',
            `Thread '${threadId}' still has a run in progress after waiting ${waitMs} ms (RUN_QUEUE_WAIT_MS)`,
          );
        }
        await this.until(place.active, deadline, gone, async () => {
          if (policy !== 'interrupt' || !place.active || place.active === cancelled) return;
          cancelled = place.active;
          await this.cancels.stop(place.active);
        });
      }
    } finally {
      await this.queue
        .leave(ticket)
        .catch((err: Error) => this.log.warn(`thread ${threadId}: leaving its queue failed: ${err.message}`));
    }
  }

  /**
   * Resolves when `runId` ended (its terminal event stored), after LOOK_MS, at the deadline or when
   * the client leaves. `then` runs once the wake-up is in place, so an end it causes is heard.
   */
  private async until(
    runId: string | null,
    deadline: number,
    gone: AbortSignal | undefined,
    then: () => Promise<void>,
  ): Promise<void> {
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const timer = setTimeout(wake, Math.max(0, Math.min(LOOK_MS, deadline - Date.now())));
    gone?.addEventListener('abort', wake);
    let set: Set<() => void> | undefined;
    if (runId) {
      set = this.waiting.get(runId);
      if (!set) this.waiting.set(runId, (set = new Set()));
      set.add(wake);
    }
    try {
      await then();
      await woken;
    } finally {
      clearTimeout(timer);
      gone?.removeEventListener('abort', wake);
      if (runId && set) {
        set.delete(wake);
        if (!set.size) this.waiting.delete(runId);
      }
    }
  }
}
