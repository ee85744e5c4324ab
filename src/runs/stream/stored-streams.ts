import { Logger } from '@nestjs/common';
import { ANY_OWNER } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { Gate } from '../../common/gate';
import type { AppConfig } from '../../config/config';
import { Metrics } from '../../ops/metrics.service';
import { Chunk, Page, parseAnnouncement, RunEventsRepository } from '../storage/run-events.repository';
import { isActiveStatus, Run } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';
import { endOrphanedLog } from './orphaned-log';
import { RunLog } from './run-log';
import { RunWatches } from './run-watches';
import { SseWriter } from './sse-writer';

/** A follower re-reads storage this often when no announcement came (one may be lost on a reconnect). */
const FOLLOW_POLL_MS = 1_000;
/**
 * An ended run whose log has no terminal event this long after it ended lost its instance before the
 * end was stored (its lease lapsed): a follower ends the log itself, as the reaper recorded it.
 */
export const ORPHAN_AFTER_MS = 3_000;

/** A stream following a run's storage, told of each announced write (its chunk when the frames came with it). */
type Follower = (chunk: Chunk | undefined) => void;

/**
 * Streams that read a run's stored log: a replay, a reader behind the log held here, a reader of a
 * run held by another instance (it follows the writes that instance announces). Storage is read a
 * page at a time through `reads`, which lets streams use half the pool at most (the other routes
 * keep the rest), and never while a socket is waited on: a page is read, its connection released,
 * the page written as the socket takes it, then the next is read.
 */
export class StoredStreams {
  /** Storage reads of streams (joins and pages), at most half the pool's connections at once. */
  readonly reads: Gate;
  /** Streams on this instance following a run's storage: run → what each does with an announced write. */
  private readonly followers = new Map<string, Set<Follower>>();
  /** Streams following storage, so a draining instance can close them. */
  private readonly following = new Set<SseWriter>();

  constructor(
    config: AppConfig,
    private readonly events: RunEventsRepository,
    private readonly runs: RunsRepository,
    private readonly metrics: Metrics,
    private readonly watches: RunWatches,
    /** The logs of runs on this instance. */
    private readonly logs: ReadonlyMap<string, RunLog>,
    private readonly log: Logger,
  ) {
    this.reads = new Gate(
      Math.max(1, Math.floor(config.database.poolSize / 2)),
      () =>
        new DomainError(
          'SERVICE_UNAVAILABLE',
          'Too many streams are reading stored events on this instance; retry',
          undefined,
          1,
        ),
    );
  }

  /** A write announced by a run's instance (NOTIFY): its followers here go on. */
  announced(payload: string): void {
    const { runId, chunk } = parseAnnouncement(payload);
    this.followers.get(runId)?.forEach((follower) => follower(chunk));
  }

  /** Announcements may have been lost while the connection that listens was down: every follower reads storage. */
  reconnected(): void {
    this.followers.forEach((set) => set.forEach((follower) => follower(undefined)));
  }

  /** The runs streams here follow. */
  followed(): Iterable<string> {
    return this.followers.keys();
  }

  /** Closes the streams following storage that `which` picks (a draining instance). */
  close(which: (writer: SseWriter) => boolean): void {
    for (const writer of this.following) if (which(writer)) writer.close();
  }

  /**
   * A reader of a run held elsewhere, or ended: storage (from `first`, the page read before the
   * headers), then each write the owner announces.
   */
  async follow(run: Run, writer: SseWriter, first?: Page): Promise<void> {
    const runId = run.id;
    // The page read before the headers goes out first: an ended run's log read to its end this way
    // needs no follower (its instance announces nothing more).
    if (first) {
      try {
        if (await this.push(runId, writer, first)) return writer.end();
      } catch (err) {
        return this.failed(runId, writer, err);
      }
    }
    let wake: () => void = () => undefined;
    const woken = () => wake();
    // A write announced with its frames goes out at once when it is the next; otherwise storage is read.
    const announced: Follower = (chunk) => {
      if (chunk && !writer.finished && !writer.isBehind && chunk.first <= writer.lastSeq + 1) {
        writer.push(chunk);
        if (chunk.terminal) writer.end();
      }
      wake();
    };
    let set = this.followers.get(runId);
    if (!set) {
      this.followers.set(runId, (set = new Set()));
      this.watches.announce('+', runId);
    }
    set.add(announced);
    this.following.add(writer);
    writer.handlers = { closed: woken, behind: () => this.metrics.streamCatchUps.inc(), drained: woken };
    try {
      let quietSince = Date.now();
      // An ended run whose log lacks its end is checked at once, a live one after a quiet while.
      let checkEnd = !isActiveStatus(run.status);
      while (!writer.finished) {
        const signal = new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, FOLLOW_POLL_MS).unref();
        });
        if (!writer.isBehind) {
          const before = writer.lastSeq;
          if (await this.push(runId, writer)) return writer.end();
          if (writer.lastSeq !== before) quietSince = Date.now();
          if (checkEnd || Date.now() - quietSince > ORPHAN_AFTER_MS) {
            checkEnd = false;
            quietSince = Date.now();
            if (await this.orphaned(runId)) continue;
          }
        }
        await signal;
      }
    } catch (err) {
      this.failed(runId, writer, err);
    } finally {
      this.following.delete(writer);
      set.delete(announced);
      if (!set.size && this.followers.get(runId) === set) {
        this.followers.delete(runId);
        this.watches.announce('-', runId);
      }
    }
  }

  /**
   * Sends `writer` stored chunks after what it has (from `page` when given), a page at a time, as
   * fast as its socket takes them (never queueing more than a chunk behind it). No connection (nor
   * place in `reads`) is held while the socket drains. True when it got the terminal event.
   */
  async push(runId: string, writer: SseWriter, page?: Page): Promise<boolean> {
    for (;;) {
      await writer.drained();
      if (writer.finished) return false;
      const { chunks, more } = page ?? (await this.reads.run(() => this.events.page(runId, writer.lastSeq)));
      page = undefined;
      for (const chunk of chunks) {
        if (writer.congested) await writer.drained();
        if (writer.finished || writer.isBehind) return false;
        writer.push(chunk);
      }
      const last = chunks.at(-1);
      if (!more) return last?.terminal === true && writer.lastSeq >= last.last;
    }
  }

  /**
   * A stream that sent its headers could not read storage: it is closed without its terminal event
   * (its client resumes with Last-Event-ID), logged and counted.
   */
  failed(runId: string, writer: SseWriter, err: unknown): void {
    if (writer.finished) return; // its client left already
    this.log.warn(
      `run ${runId}: reading its stored events failed, its stream is closed: ${(err as Error).message}`,
    );
    this.metrics.streamsClosed.inc({ reason: 'storage_failed' });
    writer.close();
  }

  /**
   * Whether the run ended without a terminal event in its log (its instance died, and another
   * recorded it INTERRUPTED); if so, the log is ended as the run was recorded.
   */
  private async orphaned(runId: string): Promise<boolean> {
    const run = await this.runs.findOne(runId, ANY_OWNER);
    if (!run || isActiveStatus(run.status) || this.logs.has(runId)) return false;
    if (!run.finishedAt || Date.now() - run.finishedAt.getTime() < ORPHAN_AFTER_MS) return false;
    const attempt = await this.runs.takeOverEnded(run.id, run.attempt);
    if (attempt !== undefined) await endOrphanedLog({ ...run, attempt }, this.events);
    return true;
  }
}
