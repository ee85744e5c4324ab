import { Logger } from '@nestjs/common';
import { ANY_OWNER } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { Semaphore } from '../../common/semaphore';
import { TurnShare } from '../../common/turn-share';
import type { AppConfig } from '../../config/config';
import { Metrics } from '../../ops/metrics.service';
import { Chunk, Page, parseAnnouncement, RunEventsRepository } from '../storage/run-events.repository';
import { isActiveStatus, Run } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';
import { endOrphanedLog } from '../storage/orphaned-log';
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

/** Frames (in characters) of stored chunks written to a stream in one socket write; a larger chunk goes alone. */
export const REPLAY_SLICE_BYTES = 64 * 1024;
/**
 * Slices of stored frames written in one turn of the event loop, all streams together: 512 KiB, a
 * few milliseconds of writing on the 2-core VM (docs/limits.md#replays).
 */
export const REPLAY_SLICES_PER_TURN = 8;

/**
 * Streams of an instance that hold a page of stored frames at once: 16 pages of 256 KiB at most are
 * in memory, whatever the number of replays (400 holding theirs made the garbage collector hold the
 * event loop hundreds of milliseconds).
 */
export const REPLAYS_AT_ONCE = 16;

/**
 * The chunks from `from` that follow each other, up to REPLAY_SLICE_BYTES of frames (one at least),
 * as one chunk; `next` is the index after them.
 */
export function sliceOf(chunks: readonly Chunk[], from: number): { chunk: Chunk; next: number } {
  const first = chunks[from];
  let next = from + 1;
  let bytes = first.frames.length;
  while (
    next < chunks.length &&
    chunks[next].first === chunks[next - 1].last + 1 &&
    bytes + chunks[next].frames.length <= REPLAY_SLICE_BYTES
  ) {
    bytes += chunks[next].frames.length;
    next++;
  }
  if (next === from + 1) return { chunk: first, next };
  const taken = chunks.slice(from, next);
  const last = taken[taken.length - 1];
  const frames = taken.map((c) => c.frames).join('');
  return { chunk: { first: first.first, last: last.last, frames, terminal: last.terminal }, next };
}

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
  readonly reads: Semaphore;
  /** Streams on this instance following a run's storage: run → what each does with an announced write. */
  private readonly followers = new Map<string, Set<Follower>>();
  /** Streams following storage, so a draining instance can close them. */
  private readonly following = new Set<SseWriter>();
  /** The slices of stored frames this instance's streams write in one turn of the event loop. */
  private readonly turns = new TurnShare(REPLAY_SLICES_PER_TURN);
  /** Streams holding a page of stored frames (reading or writing it), REPLAYS_AT_ONCE at most; the others wait in order. */
  private readonly replaying = new Semaphore(
    REPLAYS_AT_ONCE,
    () => new Error('a replay waits its turn, never refused'),
  );

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
    this.reads = new Semaphore(
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
        // A stream that fell behind on it lacks frames: storage catches it up, then ends it.
        if (chunk.terminal && !writer.isBehind) writer.end();
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
   * fast as its socket takes them, each page once the stream has one of the REPLAYS_AT_ONCE places.
   * A page goes out a slice at a time (REPLAY_SLICE_BYTES of frames in one socket write), each slice
   * once the socket drained what it was given and the replica's {@link turns} has room: however many
   * streams replay, one turn of the event loop writes REPLAY_SLICES_PER_TURN slices at most. No
   * connection (nor place in `reads`) is held while the socket drains or a turn is waited for; a
   * socket that takes nothing for the write timeout is closed, and its place given to the next.
   * True when it got the terminal event.
   */
  async push(runId: string, writer: SseWriter, page?: Page): Promise<boolean> {
    for (;;) {
      await writer.drained();
      if (writer.finished) return false;
      const ended = await this.replaying.run(async () => {
        const { chunks, more } =
          page ?? (await this.reads.run(() => this.events.page(runId, writer.lastSeq)));
        page = undefined;
        for (let from = 0; from < chunks.length;) {
          const slice = sliceOf(chunks, from);
          await writer.drained();
          await this.turns.take();
          if (writer.finished || writer.isBehind) return false;
          writer.push(slice.chunk);
          from = slice.next;
        }
        const last = chunks.at(-1);
        return more ? undefined : last?.terminal === true && writer.lastSeq >= last.last;
      });
      if (ended !== undefined) return ended;
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
