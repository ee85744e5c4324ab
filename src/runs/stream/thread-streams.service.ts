import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { idScope, Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { PgNotifications } from '../../database/pg-notifications.service';
import { DrainState } from '../../ops/drain.service';
import { ThreadRow, ThreadsRepository } from '../../threads/threads.repository';
import { Run } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';
import { Join, RunStreams } from './run-streams.service';
import { SseConnection, SseWriter } from './sse-writer';

/**
 * Where a thread's stream is: the run (its ordinal in the thread, from 1, in the order the runs
 * started) and the last event of that run the client has (the run's own sequence number). On the
 * wire an event's id is `<run>:<seq>`: unambiguous whatever the run ids are, and resumable.
 */
export type ThreadPosition = { run: number; seq: number };

/** A thread's events as a client sends them back: `<run>:<seq>`, both decimal integers, the run from 1. */
export function parseThreadEventId(text: string): ThreadPosition | undefined {
  const m = /^(\d{1,16}):(\d{1,16})$/.exec(text.trim());
  if (!m) return undefined;
  const [run, seq] = [Number(m[1]), Number(m[2])];
  return run >= 1 && Number.isSafeInteger(run) && Number.isSafeInteger(seq) ? { run, seq } : undefined;
}

/** A new run of a thread followed elsewhere: the thread's id. */
const THREAD_RUN_CHANNEL = 'io_bridge_thread_run';
/** An instance follows a thread (said again every WATCH_REFRESH_MS): the thread's id. */
const THREAD_WATCH_CHANNEL = 'io_bridge_thread_watch';
const WATCH_REFRESH_MS = 5_000;
const WATCH_TTL_MS = 15_000;
/**
 * A stream waiting for its thread's next run looks for it this often even when nobody told it (a
 * notification lost on a reconnect, or a run claimed elsewhere just before that instance heard of
 * the follower). Told, it looks at once.
 */
const NEXT_RUN_POLL_MS = 5_000;

/**
 * Streams that follow a thread across its runs (GET /threads/:threadId/events, docs/protocol.md#following-a-thread): each run
 * in turn, from RUN_STARTED (or after the position resumed from) to its terminal event, through
 * RunStreams (from memory on the run's instance, from storage and announcements elsewhere), then
 * the next run of the thread whenever and wherever it starts. A stream never ends by itself; the
 * client closes it. Instances learn of a new run on a thread one of them follows through
 * `NOTIFY io_bridge_thread_run`, sent only for threads some instance said it follows.
 */
@Injectable()
export class ThreadStreams implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(ThreadStreams.name);
  /** Streams here that look for their thread's next run when told: thread → wake-ups. */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Followed threads being deleted, until their streams here ended. */
  private readonly deleted = new Set<string>();
  /** Threads other instances follow → when that is forgotten unless said again. */
  private readonly followedElsewhere = new Map<string, number>();
  /** Every thread stream here, so a draining instance can close them. */
  private readonly connections = new Set<SseConnection>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly streams: RunStreams,
    private readonly runs: RunsRepository,
    private readonly threads: ThreadsRepository,
    private readonly notifications: PgNotifications,
    private readonly drain: DrainState,
  ) {}

  onModuleInit(): void {
    this.notifications.on(THREAD_RUN_CHANNEL, (threadId) => this.wake(threadId));
    this.notifications.on(THREAD_WATCH_CHANNEL, (threadId) =>
      this.followedElsewhere.set(threadId, Date.now() + WATCH_TTL_MS),
    );
    // A thread being deleted (announced just before the delete): its streams end, after the run
    // they show (which is cancelled).
    this.notifications.on('io_bridge_thread_cancel', (payload) => {
      const { threadId } = JSON.parse(payload) as { threadId: string };
      if (!this.waiting.has(threadId)) return;
      this.deleted.add(threadId);
      this.wake(threadId);
    });
    this.notifications.onReconnect(() => {
      for (const threadId of this.waiting.keys()) this.wake(threadId);
    });
    this.timer = setInterval(() => this.refreshWatches(), WATCH_REFRESH_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /**
   * A run of a stored thread started here (its log is open): the thread's streams take it, here at
   * once, on other instances when one of them follows the thread.
   */
  runStarted(threadId: string): void {
    this.wake(threadId);
    if ((this.followedElsewhere.get(threadId) ?? 0) > Date.now()) this.announce(THREAD_RUN_CHANNEL, threadId);
  }

  /**
   * A draining instance: thread streams waiting for a run end now, their clients reconnect elsewhere.
   * One reading a run held here goes on while this replica serves that run (relayed after a
   * hand-over), then ends; RunStreams closes those reading storage.
   */
  closeFollowers(): void {
    for (const connection of this.connections) if (!connection.reader) connection.end();
  }

  /**
   * The thread a request may follow, checked before anything is counted for the request: another
   * owner's thread (or none) is a 404, the same whatever that owner is doing (docs/protocol.md, Owners).
   */
  async find(threadId: string, principal: Principal): Promise<ThreadRow> {
    const thread = await this.threads.find(threadId, idScope(principal, 'read'));
    if (!thread) throw new DomainError('NOT_FOUND', `Thread '${threadId}' not found`);
    return thread;
  }

  /**
   * Checks a request to follow a thread it may read ({@link find}), before any byte is sent. Without
   * `after` the stream starts with the thread's active run, from its first event, or else with its
   * next run. A position naming a run the thread has not had starts with the next.
   */
  async join(
    thread: ThreadRow,
    after: ThreadPosition | undefined,
  ): Promise<(connection: SseConnection) => void> {
    const { id: threadId, resourceId: owner } = thread;
    const latest = await this.runs.latestOfThread(threadId, owner);
    const next = { run: latest.count + 1, seq: 0 };
    const from = after
      ? after.run <= latest.count
        ? after
        : next
      : latest.active
        ? { run: latest.count, seq: 0 }
        : next;
    return (connection) => void this.follow(threadId, owner, from, connection);
  }

  private async follow(
    threadId: string,
    owner: string,
    from: ThreadPosition,
    connection: SseConnection,
  ): Promise<void> {
    let wake: () => void = () => undefined;
    const woken = () => wake();
    let set = this.waiting.get(threadId);
    if (!set) {
      this.waiting.set(threadId, (set = new Set()));
      this.announce(THREAD_WATCH_CHANNEL, threadId);
    }
    set.add(woken);
    this.connections.add(connection);
    connection.onClose = woken;
    let position = from;
    try {
      while (!connection.finished) {
        if (this.deleted.has(threadId)) return connection.end();
        // Made before the read: a wake-up during it is not lost.
        const signal = new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, NEXT_RUN_POLL_MS).unref();
        });
        const run = await this.runs.nthOfThread(threadId, owner, position.run);
        if (run) {
          await this.streamRun(run, position, connection);
          position = { run: position.run + 1, seq: 0 };
          if (this.drain.isDraining) connection.end();
          continue;
        }
        if (!(await this.threads.find(threadId, owner))) return connection.end();
        await signal;
      }
    } catch (err) {
      this.log.warn(`thread ${threadId}: following its runs failed: ${(err as Error).message}`);
      connection.end();
    } finally {
      this.connections.delete(connection);
      set.delete(woken);
      if (!set.size && this.waiting.get(threadId) === set) {
        this.waiting.delete(threadId);
        this.deleted.delete(threadId);
      }
    }
  }

  /** One run of the thread, after `position.seq`, until its terminal event (or the client left). */
  private async streamRun(run: Run, position: ThreadPosition, connection: SseConnection): Promise<void> {
    let join: Join | undefined;
    try {
      join = await this.streams.joinRun(run, position.seq);
    } catch (err) {
      // A run whose events are no longer kept is skipped: the thread's messages hold what it said.
      if (err instanceof DomainError && err.code === 'RUN_EVENTS_EXPIRED') return;
      throw err;
    }
    if (!join || connection.finished) return;
    const start = join;
    await new Promise<void>((ended) =>
      start(new SseWriter(connection, position.seq, { idPrefix: `${position.run}:`, ended })),
    );
  }

  private wake(threadId: string): void {
    this.waiting.get(threadId)?.forEach((wake) => wake());
  }

  private refreshWatches(): void {
    for (const threadId of this.waiting.keys()) this.announce(THREAD_WATCH_CHANNEL, threadId);
    const now = Date.now();
    for (const [threadId, until] of this.followedElsewhere)
      if (until <= now) this.followedElsewhere.delete(threadId);
  }

  private announce(channel: typeof THREAD_RUN_CHANNEL | typeof THREAD_WATCH_CHANNEL, threadId: string): void {
    void this.notifications
      .notify(channel, threadId)
      .catch((err: Error) => this.log.warn(`announcing on ${channel} failed: ${err.message}`));
  }
}
