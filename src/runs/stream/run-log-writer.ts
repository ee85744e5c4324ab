import type { Logger } from '@nestjs/common';
import {
  EVENT_LOG_WRITES,
  type LogTail,
  type Refused,
  type RunEventsRepository,
  type StoredChunk,
} from '../storage/run-events.repository';
import type { LogStore, RunLog } from './run-log';

/** What became of a write of a log's chunk: `early`, a terminal chunk of a run whose end is not recorded yet. */
type Written = 'stored' | 'failed' | Refused['reason'];

/**
 * Stores the logs of the runs on this instance: what the runs produced is written at once, one
 * statement for all of them while the previous is in flight (a group commit: statements follow the
 * database's pace, not the number of runs or events). A log whose write failed is tried again; a
 * complete log is forgotten once stored, or given up when it could not be within the retention.
 * A run's end stores its log's last events itself (`tail`), in the statement that records it.
 */
export class RunLogWriter implements LogStore {
  /** Complete logs not stored yet (a write failed), kept until the retention passes. */
  private readonly completedAt = new Map<string, number>();
  /** Logs with chunks to store, for the next write. */
  private readonly due = new Set<RunLog>();
  private writes = 0;
  private writeScheduled = false;

  constructor(
    private readonly events: RunEventsRepository,
    /** The logs held here (shared with RunStreams); a log leaves it once complete and stored. */
    private readonly logs: Map<string, RunLog>,
    /** Whether another instance follows the run (its writes are then announced). */
    private readonly followed: (runId: string) => boolean,
    private readonly retentionMs: number,
    private readonly log: Logger,
    /** Another claim of the log's run refused its write: it must stop here (its readers follow storage). */
    private readonly superseded: (log: RunLog) => void,
  ) {}

  /** A chunk was framed (or the log completed): it is stored with the next write. */
  produced(log: RunLog): void {
    if (log.complete) this.completedAt.set(log.runId, Date.now());
    this.due.add(log);
    this.scheduleWrite();
  }

  /**
   * The log's unstored events, for its run's end to store in the statement that records it (one
   * round trip, where a write and then the end took two); none when there is nothing to take or the
   * log's writes are failing (the end is recorded without them, and they are written as before).
   */
  async tail(log: RunLog): Promise<LogTail | undefined> {
    const chunk = await log.takeTail();
    if (!chunk) return undefined;
    this.due.delete(log);
    return {
      chunk,
      announce: this.followed(log.runId),
      settle: (result) => this.settle(log, chunk.last, result),
    };
  }

  /** Logs whose write failed are tried again; those that could not be stored within the retention are given up. */
  retry(): void {
    for (const log of this.logs.values()) if (log.failing && !log.writing) this.due.add(log);
    this.scheduleWrite();
    this.dropStale();
  }

  /** Stores what is left (a few tries), for a stopping instance. */
  async flush(): Promise<void> {
    for (let i = 0; i < 3 && [...this.logs.values()].some((l) => l.unstored.length); i++) {
      await this.write([...this.logs.values()].filter((log) => !log.writing));
      while (this.writes) await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private scheduleWrite(): void {
    if (this.writeScheduled || this.writes >= EVENT_LOG_WRITES || !this.due.size) return;
    this.writeScheduled = true;
    // What the runs produce in this event-loop turn goes into the same statement.
    setImmediate(() => {
      this.writeScheduled = false;
      const logs = [...this.due].filter((log) => !log.writing);
      for (const log of logs) this.due.delete(log);
      if (logs.length) void this.write(logs);
    });
  }

  /**
   * Writes the unstored chunks of `logs` (one per run: its consecutive chunks joined) in one
   * statement, one write in flight per run; each log sends what was stored to its readers.
   */
  private async write(logs: RunLog[]): Promise<void> {
    const batch: Array<[RunLog, StoredChunk]> = [];
    for (const log of logs) {
      if (log.writing) continue;
      if (!log.unstored.length) {
        // Complete with everything stored already (a run handed over or parked right after a write).
        if (log.complete) this.forget(log);
        continue;
      }
      // After a failed write the events may be stored already (it may have committed): no first try.
      const firstTry = !log.failing;
      batch.push([log, { ...log.take(), runId: log.runId, attempt: log.attempt, firstTry }]);
    }
    if (!batch.length) return;
    const announce = batch
      .filter(([log, chunk]) => chunk.terminal || this.followed(log.runId))
      .map(([log]) => log.runId);
    this.writes++;
    let ok = false;
    let refused = new Map<string, Refused['reason']>();
    try {
      const answer = await this.events.append(
        batch.map(([, chunk]) => chunk),
        announce,
      );
      refused = new Map(answer.map((r) => [r.runId, r.reason]));
      ok = true;
    } catch (err) {
      this.log.warn(`storing the events of ${batch.length} run(s) failed: ${(err as Error).message}`);
    } finally {
      this.writes--;
    }
    for (const [log, chunk] of batch)
      this.settle(log, chunk.last, ok ? (refused.get(log.runId) ?? 'stored') : 'failed');
  }

  /** A write of the log's chunks up to `last` ended: its readers get what was stored, the rest is written next. */
  private settle(log: RunLog, last: number, written: Written): void {
    log.writing = 0;
    if (written === 'superseded') {
      this.forget(log);
      this.superseded(log);
      return;
    }
    // A terminal chunk refused as early (its end not recorded yet) is tried again as a failed write.
    if (written === 'stored') log.stored(last);
    else log.storeFailed();
    if (log.complete && !log.unstored.length) {
      this.forget(log);
    } else if (written === 'stored' && log.unstored.length) {
      this.due.add(log);
    }
    this.scheduleWrite();
  }

  /** A complete, stored log leaves memory (unless a continuation of its run here holds the id now). */
  private forget(log: RunLog): void {
    if (this.logs.get(log.runId) === log) this.logs.delete(log.runId);
    this.completedAt.delete(log.runId);
  }

  /** Complete logs that could not be stored within the retention are given up. */
  private dropStale(): void {
    const limit = Date.now() - this.retentionMs;
    for (const [runId, at] of this.completedAt) {
      if (at >= limit) continue;
      this.completedAt.delete(runId);
      this.logs.delete(runId);
      this.log.warn(`run ${runId}: its events could not be stored; given up`);
    }
  }
}
