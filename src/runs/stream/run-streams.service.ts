import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Subscribable } from 'rxjs';
import { idScope, Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { Metrics } from '../../ops/metrics.service';
import { AguiEvent } from '../../protocol/agui-events';
import { RunLog } from './run-log';
import { RunLogWriter } from './run-log-writer';
import {
  Chunk,
  FIRST_PAGE_BYTES,
  Page,
  RUN_EVENTS_CHANNEL,
  RunEventsRepository,
} from '../storage/run-events.repository';
import { isActiveStatus, Run } from '../storage/run.entity';
import { RunsRepository } from '../storage/runs.repository';
import { SseWriter } from './sse-writer';
import { RunWatches, WATCH_REFRESH_MS } from './run-watches';
import { ORPHAN_AFTER_MS, StoredStreams } from './stored-streams';

/** How often logs of runs ended longer than the retention ago are deleted. */
const SWEEP_MS = 60_000;
/** How often writes that failed are tried again. */
const RETRY_MS = 1_000;

/** A stream to start: its owner is the run's instance, a follower of its storage elsewhere, or a replay. */
export type Join = (writer: SseWriter) => void;

/** A run claimed here, as its first reader's stream opens it. */
export type OpenedRun = {
  /** Its events (subscribing starts it); they follow `log`. */
  events$: Subscribable<AguiEvent>;
  /** Its log as the claim began it, stored: RUN_STARTED. */
  log: Chunk;
  /** How long it goes on once its last reader left. */
  disconnectGraceMs: number;
  /** Stops it when nobody reads it any more (after the grace). */
  abandon: () => void;
};

/**
 * The event logs of runs, and every stream of them (docs/protocol.md#rejoining-a-run). A run's own instance
 * keeps its log (RunLog) and serves its readers from memory, each chunk once it is stored
 * (RunLogWriter: a group commit of every run's new chunks). A
 * reader on another instance (or one behind) reads storage, then follows the writes the owner
 * announces (NOTIFY). When the last reader of a live run leaves, the run is stopped, after the
 * run's disconnect grace period if it has one. Logs are deleted RUN_EVENTS_RETENTION_MS after their
 * run ended.
 *
 * Streams that read storage (StoredStreams) never hold a pool connection while they wait on a
 * socket. A join reads its first page before any header, so a replay the database cannot serve now
 * is a 503, never a 200 without events; which instances follow which runs is RunWatches'.
 */
@Injectable()
export class RunStreams implements OnModuleInit, OnModuleDestroy {
  private readonly log = new Logger(RunStreams.name);
  /** Logs of runs on this instance, until the log is complete and stored. */
  private readonly logs = new Map<string, RunLog>();
  /** Which other instances follow which runs of this one. */
  private readonly watches: RunWatches;
  /** Streams of runs this instance handed over (a drain), relayed from storage until they end or it must go. */
  private readonly relays = new Set<SseWriter>();
  private timers: NodeJS.Timeout[] = [];
  private readonly writer: RunLogWriter;
  /** Streams reading storage, and the run's writes they follow. */
  private readonly stored: StoredStreams;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: RunEventsRepository,
    private readonly runs: RunsRepository,
    private readonly notifications: PgNotifications,
    private readonly metrics: Metrics,
  ) {
    this.watches = new RunWatches(notifications, this.logs, this.log);
    this.writer = new RunLogWriter(
      events,
      this.logs,
      // A continued run's followers watched the replica that died: its writes are announced anyway.
      (runId) => this.watches.has(runId) || this.logs.get(runId)?.continued === true,
      config.runEvents.retentionMs,
      this.log,
      (log) => this.superseded(log),
    );
    this.stored = new StoredStreams(config, events, runs, metrics, this.watches, this.logs, this.log);
  }

  onModuleInit(): void {
    this.notifications.on(RUN_EVENTS_CHANNEL, (payload) => this.stored.announced(payload));
    this.watches.listen();
    this.notifications.onReconnect(() => this.stored.reconnected());
    const every = (ms: number, fn: () => void) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(RETRY_MS, () => this.writer.retry());
    every(WATCH_REFRESH_MS, () => this.watches.refresh(this.stored.followed()));
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
    this.stored.close((writer) => !this.relays.has(writer));
  }

  /**
   * Takes on a run another replica left (continued here): its log goes on after `after` with
   * `first` (what was left open, closed), then the run's events. Nobody reads it yet; readers rejoin.
   */
  adopt(
    runId: string,
    attempt: number,
    events$: Subscribable<AguiEvent>,
    after: number,
    first: AguiEvent[],
  ): void {
    const log = new RunLog(runId, {
      graceMs: 0,
      abandon: () => undefined,
      store: this.writer,
      after,
      attempt,
    });
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

  /**
   * Another replica took the run over while this one was alive (its lease lapsed: a pause, a starved
   * event loop): the run stops here without an end and writes nothing more; its readers here follow
   * the log from where they are, as the other replica goes on with it.
   */
  private superseded(log: RunLog): void {
    this.log.warn(`run ${log.runId}: another replica took it over; stopped here, its readers follow its log`);
    for (const sink of log.supersede()) this.relay(log.runId, sink as SseWriter);
    void this.runs
      .giveBackAttempt(log.runId, log.attempt)
      .catch((err: Error) =>
        this.log.warn(`run ${log.runId}: giving its attempt back failed: ${err.message}`),
      );
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
    void this.stored
      .follow({ id: runId, status: 'running' } as Run, writer)
      .finally(() => this.relays.delete(writer));
  }

  /**
   * Serves a run started here to its first reader: the log begins with what the claim stored, then
   * takes the run's events; the writer gets them from RUN_STARTED on.
   */
  open(runId: string, run: OpenedRun, writer: SseWriter): void {
    // A run starts as its first claim; a later claim elsewhere continues it in a log of its own.
    const log = new RunLog(runId, {
      graceMs: run.disconnectGraceMs,
      abandon: run.abandon,
      store: this.writer,
      begun: run.log,
      attempt: 1,
    });
    this.logs.set(runId, log);
    this.watches.opened(runId, log);
    this.serveLocal(log, writer, log.addReader());
    log.start(run.events$);
  }

  /**
   * The run a request may read, checked before anything is counted for the request: another owner's
   * run (or none) is a 404, the same whatever that owner is doing (docs/protocol.md, Owners). Read
   * through the streams' share of the pool, like the join that follows; a 503 when it cannot be had
   * within the connect timeout.
   */
  find(runId: string, principal: Principal): Promise<Run> {
    return this.stored.reads.run(async () => {
      const run = await this.runs.findOne(runId, idScope(principal, 'read'));
      if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
      return run;
    }, this.config.database.timeouts.connectMs);
  }

  /**
   * Checks a request to read the events of a run it may read ({@link find}) after `after`, before any
   * byte is sent: a run ended longer than the retention ago (or whose events are gone) is a 410.
   * Undefined when the run ended and the client has every event: nothing to stream (a 204, which
   * also stops a browser EventSource from reconnecting). A run not held here has its first page read
   * now; when storage cannot be read within the connect timeout (the streams' share of the pool
   * taken, or the pool itself), the request is a 503.
   */
  join(run: Run, after: number): Promise<Join | undefined> {
    return this.stored.reads.run(() => this.prepareJoin(run, after), this.config.database.timeouts.connectMs);
  }

  /**
   * {@link join} of a run the caller may read (a thread's stream goes from one run to the next): it
   * waits its turn to read storage for as long as it takes, its stream being open already.
   */
  joinRun(run: Run, after: number): Promise<Join | undefined> {
    return this.stored.reads.run(() => this.prepareJoin(run, after));
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
      first = await this.events.page(runId, after, FIRST_PAGE_BYTES);
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
      else void this.stored.follow(run, writer, first);
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
        await this.stored.push(log.runId, writer);
        if (writer.lastSeq === before && !writer.congested && !log.covers(writer.lastSeq)) {
          // Stored but not readable yet (a write committing): the next turn sees it.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
      if (log.handedOver) this.relay(log.runId, writer);
      else if (!writer.finished && !writer.isBehind) log.attach(writer, writer.lastSeq);
    } catch (err) {
      this.stored.failed(log.runId, writer, err);
    }
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
