import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Subscribable } from 'rxjs';
import { ANY_OWNER, idScope, Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { Gate } from '../../common/gate';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { Metrics } from '../../ops/metrics.service';
import { AguiEvent } from '../../protocol/agui-events';
import { RunLog } from './run-log';
import { RunLogWriter } from './run-log-writer';
import { endOrphanedLog } from './orphaned-log';
import {
  Chunk,
  Page,
  parseAnnouncement,
  RUN_EVENTS_CHANNEL,
  RunEventsRepository,
} from '../storage/run-events.repository';
import { isActiveStatus, Run } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';
import { SseWriter } from './sse-writer';

/** How often a follower on another instance says it still follows a run; the owner forgets it after WATCH_TTL_MS. */
const WATCH_REFRESH_MS = 5_000;
const WATCH_TTL_MS = 15_000;
/** A follower re-reads storage this often when no announcement came (one may be lost on a reconnect). */
const FOLLOW_POLL_MS = 1_000;
/**
 * An ended run whose log has no terminal event this long after it ended lost its instance before the
 * end was stored (its lease lapsed): a follower ends the log itself, as the reaper recorded it.
 */
const ORPHAN_AFTER_MS = 3_000;
/** How often logs of runs ended longer than the retention ago are deleted. */
const SWEEP_MS = 60_000;
/** How often writes that failed are tried again. */
const RETRY_MS = 1_000;

/** A stream following a run's storage, told of each announced write (its chunk when the frames came with it). */
type Follower = (chunk: Chunk | undefined) => void;

/** A stream to start: its owner is the run's instance, a follower of its storage elsewhere, or a replay. */
export type Join = (writer: SseWriter) => void;

/**
 * The event logs of runs, and every stream of them (issue 13, resumable runs). A run's own instance
 * keeps its log (RunLog) and serves its readers from memory, each chunk once it is stored
 * (RunLogWriter: a group commit of every run's new chunks). A
 * reader on another instance (or one behind) reads storage, then follows the writes the owner
 * announces (NOTIFY). When the last reader of a live run leaves, the run is stopped, after the
 * run's disconnect grace period if it has one. Logs are deleted RUN_EVENTS_RETENTION_MS after their
 * run ended.
 *
 * Streams read storage a page at a time through `reads`, which lets them use half the pool at most
 * (the other routes keep the rest), and never while they wait on a socket: a page is read, its
 * connection released, the page written as the socket takes it, then the next is read. A join
 * reads its first page before any header, so a replay the database cannot serve now is a 503,
 * never a 200 without events.
 */
@Injectable()
export class RunStreams implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RunStreams.name);
  private readonly instance = randomUUID();
  /** Logs of runs on this instance, until the log is complete and stored. */
  private readonly logs = new Map<string, RunLog>();
  /** Instances following a run here: run → instance → [expiry, release of its reader]. */
  private readonly watchers = new Map<string, Map<string, { expires: number; release?: () => void }>>();
  /** Streams on this instance following a run's storage: run → what each does with an announced write. */
  private readonly followers = new Map<string, Set<Follower>>();
  /** Streams following storage, so a draining instance can close them. */
  private readonly following = new Set<SseWriter>();
  /** Streams of runs this instance handed over (a drain), relayed from storage until they end or it must go. */
  private readonly relays = new Set<SseWriter>();
  private timers: NodeJS.Timeout[] = [];
  private readonly writer: RunLogWriter;
  /** Every log's `produced`: one function for all of them, not a closure per open run. */
  private readonly onProduced = (log: RunLog) => this.writer.produced(log);
  /** Storage reads of streams (joins and pages), at most half the pool's connections at once. */
  private readonly reads: Gate;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: RunEventsRepository,
    private readonly runs: RunsRepository,
    private readonly notifications: PgNotifications,
    private readonly metrics: Metrics,
  ) {
    this.writer = new RunLogWriter(
      events,
      this.logs,
      // A continued run's followers watched the replica that died: its writes are announced anyway.
      (runId) => this.watchers.has(runId) || this.logs.get(runId)?.continued === true,
      config.runEvents.retentionMs,
      this.log,
    );
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

  onModuleInit(): void {
    this.notifications.on(RUN_EVENTS_CHANNEL, (payload) => {
      const { runId, chunk } = parseAnnouncement(payload);
      this.followers.get(runId)?.forEach((follower) => follower(chunk));
    });
    this.notifications.on('io_bridge_run_watch', (payload) => this.watched(payload));
    this.notifications.onReconnect(() =>
      this.followers.forEach((set) => set.forEach((follower) => follower(undefined))),
    );
    const every = (ms: number, fn: () => void) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(RETRY_MS, () => this.writer.retry());
    every(WATCH_REFRESH_MS, () => this.refreshWatches());
    every(SWEEP_MS, () => void this.sweep());
  }

  /** Stores what is left (the runs were ended by the drain before), then stops. */
  async onModuleDestroy(): Promise<void> {
    this.timers.forEach(clearInterval);
    this.timers = [];
    await this.writer.flush();
    for (const log of this.logs.values()) log.close();
  }

  /** A draining instance: streams that follow runs (not their own) end; their clients reconnect elsewhere. */
  closeFollowers(): void {
    for (const writer of this.following) if (!this.relays.has(writer)) writer.close();
  }

  /**
   * Takes on a run another replica left (continued here): its log goes on after `after` with
   * `first` (what was left open, closed), then the run's events. Nobody reads it yet; readers rejoin.
   */
  adopt(runId: string, events$: Subscribable<AguiEvent>, after: number, first: AguiEvent[]): void {
    const log = new RunLog(runId, { graceMs: 0, abandon: () => undefined, produced: this.onProduced, after });
    log.continued = true;
    this.logs.set(runId, log);
    log.start(events$, first);
  }

  /**
   * The run went to another replica (this one drains; its events stopped): what its log framed is
   * stored, and its readers here follow storage from where they are (relays).
   */
  handOver(runId: string): void {
    const log = this.logs.get(runId);
    if (!log || log.complete) return;
    for (const sink of log.handOver()) this.relay(runId, sink as SseWriter);
  }

  /** Stores what the logs framed (before their runs are handed over). */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  get relaying(): number {
    return this.relays.size;
  }

  /** This replica must go: relayed streams end with `frame` (RUN_ERROR RUN_MOVED, no id); their clients rejoin. */
  endRelays(unlogged: string): void {
    for (const writer of this.relays) writer.end(unlogged);
  }

  private relay(runId: string, writer: SseWriter): void {
    if (this.relays.has(writer) || writer.finished) return;
    this.relays.add(writer);
    void this.follow({ id: runId, status: 'running' } as Run, writer).finally(() =>
      this.relays.delete(writer),
    );
  }

  /**
   * Serves a run started here to its first reader: the log takes the run's events, the writer gets
   * them from RUN_STARTED on. `stop` ends the run when nobody reads it any more (after `graceMs`).
   */
  open(
    runId: string,
    events$: Subscribable<AguiEvent>,
    graceMs: number,
    stop: () => void,
    writer: SseWriter,
  ): void {
    const log = new RunLog(runId, { graceMs, abandon: stop, produced: this.onProduced });
    this.logs.set(runId, log);
    for (const watch of this.watchers.get(runId)?.values() ?? []) watch.release ??= log.addReader();
    this.serveLocal(log, writer, log.addReader());
    log.start(events$);
  }

  /**
   * Checks a request to read a run's events after `after`, before any byte is sent: another
   * owner's run (or none) is a 404; a run ended longer than the retention ago (or whose events are
   * gone) is a 410. Undefined when the run ended and the client has every event: nothing to stream
   * (a 204, which also stops a browser EventSource from reconnecting). A run not held here has its
   * first page read now; when storage cannot be read within the connect timeout (the streams' share
   * of the pool taken, or the pool itself), the request is a 503.
   */
  join(runId: string, principal: Principal, after: number): Promise<Join | undefined> {
    return this.reads.run(async () => {
      const run = await this.runs.findOne(runId, idScope(principal, 'read'));
      if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
      return this.prepareJoin(run, after);
    }, this.config.database.timeouts.connectMs);
  }

  /**
   * {@link join} of a run the caller may read (a thread's stream goes from one run to the next): it
   * waits its turn to read storage for as long as it takes, its stream being open already.
   */
  joinRun(run: Run, after: number): Promise<Join | undefined> {
    return this.reads.run(() => this.prepareJoin(run, after));
  }

  private async prepareJoin(run: Run, after: number): Promise<Join | undefined> {
    const runId = run.id;
    const local = this.logs.get(runId);
    if (local?.complete && !local.handedOver && after >= local.seq) return undefined;
    let first: Page | undefined;
    if (!local) {
      const ended = isActiveStatus(run.status)
        ? undefined
        : run.finishedAt
          ? Date.now() - run.finishedAt.getTime()
          : Infinity;
      if (ended !== undefined && ended > this.config.runEvents.retentionMs) throw this.expired(runId);
      first = await this.events.page(runId, after);
      if (ended !== undefined) {
        if (ended > ORPHAN_AFTER_MS && !first.chunks.length && !(await this.events.any(runId)))
          throw this.expired(runId);
        const [next] = first.chunks;
        if (next?.terminal && next.last <= after) return undefined;
      }
    }
    return (writer) => {
      const log = this.logs.get(runId);
      this.metrics.streamJoins.inc({ source: log ? 'local' : 'follow' });
      if (log && !log.handedOver) this.serveLocal(log, writer, log.addReader());
      else void this.follow(run, writer, first);
    };
  }

  private expired(runId: string): DomainError {
    return new DomainError(
      'RUN_EVENTS_EXPIRED',
      `The events of run '${runId}' are no longer kept (they are kept ${this.config.runEvents.retentionMs} ms after a run ends)`,
    );
  }

  /** A reader of a log held here: from memory when it holds what the reader lacks, else storage first. */
  private serveLocal(log: RunLog, writer: SseWriter, release: () => void): void {
    writer.handlers = {
      closed: () => {
        log.detach(writer);
        release();
      },
      behind: () => {
        this.metrics.streamCatchUps.inc();
        log.detach(writer);
      },
      drained: () => void this.catchUp(log, writer),
    };
    void this.catchUp(log, writer);
  }

  private async catchUp(log: RunLog, writer: SseWriter): Promise<void> {
    try {
      while (!writer.finished && !writer.isBehind && !log.covers(writer.lastSeq)) {
        const before = writer.lastSeq;
        await this.pushStored(log.runId, writer);
        if (writer.lastSeq === before && !writer.congested && !log.covers(writer.lastSeq)) {
          // Stored but not readable yet (a write committing): the next turn sees it.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      if (log.handedOver) this.relay(log.runId, writer);
      else if (!writer.finished && !writer.isBehind) log.attach(writer, writer.lastSeq);
    } catch (err) {
      this.readFailed(log.runId, writer, err);
    }
  }

  /**
   * A reader of a run held elsewhere, or ended: storage (from `first`, the page read before the
   * headers), then each write the owner announces.
   */
  private async follow(run: Run, writer: SseWriter, first?: Page): Promise<void> {
    const runId = run.id;
    // The page read before the headers goes out first: an ended run's log read to its end this way
    // needs no follower (its instance announces nothing more).
    if (first) {
      try {
        if (await this.pushStored(runId, writer, first)) return writer.end();
      } catch (err) {
        return this.readFailed(runId, writer, err);
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
      this.sendWatch('+', runId);
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
          if (await this.pushStored(runId, writer)) return writer.end();
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
      this.readFailed(runId, writer, err);
    } finally {
      this.following.delete(writer);
      set.delete(announced);
      if (!set.size && this.followers.get(runId) === set) {
        this.followers.delete(runId);
        this.sendWatch('-', runId);
      }
    }
  }

  /**
   * Sends `writer` stored chunks after what it has (from `page` when given), a page at a time, as
   * fast as its socket takes them (never queueing more than a chunk behind it). No connection (nor
   * place in `reads`) is held while the socket drains. True when it got the terminal event.
   */
  private async pushStored(runId: string, writer: SseWriter, page?: Page): Promise<boolean> {
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
  private readFailed(runId: string, writer: SseWriter, err: unknown): void {
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
    await endOrphanedLog(run, this.events);
    return true;
  }

  private sendWatch(op: '+' | '-', runId: string): void {
    void this.notifications
      .notify('io_bridge_run_watch', `${op} ${this.instance} ${runId}`)
      .catch((err: Error) => this.log.warn(`announcing a follower of run ${runId} failed: ${err.message}`));
  }

  private refreshWatches(): void {
    for (const runId of this.followers.keys()) this.sendWatch('+', runId);
    const now = Date.now();
    for (const [runId, byInstance] of this.watchers) {
      for (const [instance, watch] of byInstance) {
        if (watch.expires > now) continue;
        byInstance.delete(instance);
        watch.release?.();
      }
      if (!byInstance.size) this.watchers.delete(runId);
    }
  }

  /** `+|- <instance> <run id>`: an instance started (or still) follows a run, or stopped. */
  private watched(payload: string): void {
    const op = payload[0];
    const rest = payload.slice(2);
    const at = rest.indexOf(' ');
    const instance = rest.slice(0, at);
    const runId = rest.slice(at + 1);
    const log = this.logs.get(runId);
    let byInstance = this.watchers.get(runId);
    if (op === '-') {
      const watch = byInstance?.get(instance);
      byInstance?.delete(instance);
      if (byInstance && !byInstance.size) this.watchers.delete(runId);
      watch?.release?.();
      return;
    }
    if (!byInstance) this.watchers.set(runId, (byInstance = new Map()));
    const watch = byInstance.get(instance);
    if (watch) watch.expires = Date.now() + WATCH_TTL_MS;
    else byInstance.set(instance, { expires: Date.now() + WATCH_TTL_MS, release: log?.addReader() });
    if (!log) return;
    // The follower reads storage now: tell it where the log is (what is unstored is being written).
    if (!log.unstored.length)
      void this.notifications
        .notify(RUN_EVENTS_CHANNEL, `0 ${log.storedSeq} f ${runId}`)
        .catch(() => undefined);
  }

  private async sweep(): Promise<void> {
    try {
      const deleted = await this.events.deleteExpired(this.config.runEvents.retentionMs);
      if (deleted) this.log.log(`deleted ${deleted} stored event chunk(s) of runs past their retention`);
    } catch (err) {
      this.log.warn(`deleting expired run events failed: ${(err as Error).message}`);
    }
  }
}
