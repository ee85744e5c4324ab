import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { spentSoFar, TokenUsage } from '../../protocol/usage';
import type { Placed } from '../../threads/mastra-rows';
import { StoredMessage } from '../../threads/message-format';
import { HeldRun, RunsRepository, SavedCheckpoint } from '../storage/runs.repository';

/** How often what a streaming run has shown is written down, at most (one statement for all runs). */
export const CHECKPOINT_MS = 1000;

/**
 * A run this instance holds, as its lease sees it. The run itself (RunExecution), so that holding a
 * lease costs no object of its own per run.
 */
export interface LeaseHolder {
  /** The run's owner: renewals and checkpoints are scoped by it, as every statement on a run. */
  readonly resourceId: string;
  /** Which claim of the run this is (a continued run's is its attempt): a later claim elsewhere supersedes it. */
  readonly attempt: number;
  /** Counts what the run has shown; a checkpoint is written when it moved. */
  readonly shownCount: number;
  /** Another instance ended the run (its lease lapsed meanwhile): it must stop at once. */
  leaseLost(): void;
  /** The lease could not be renewed in time (the database is down or frozen) and may lapse: stop. */
  leaseUnrenewable(): void;
  /** What to keep if this instance dies now, and what another continues from. */
  checkpoint(): Checkpoint;
}

/**
 * A run's checkpoint: `messages`, what it showed, placed into rows (kept in its thread if it ends INTERRUPTED;
 * undefined for a run that stores nothing); `steps`, its completed steps and the messages up to the
 * end of the last, and the tokens spent up to it (another replica continues from there).
 */
export type Checkpoint = {
  messages?: Placed;
  steps?: { count: number; messages: StoredMessage[]; usage?: TokenUsage[] };
};

type Held = {
  holder: LeaseHolder;
  written: number;
  /** Completed steps whose progress is written. */
  stepsWritten: number;
  /** When the last renewal that succeeded was sent (or the run was claimed): the lease runs from about then. */
  since: number;
  /** Told it may lapse (once). */
  unrenewable: boolean;
};

/**
 * Keeps the leases of this instance's runs fresh (runs whose lease lapsed are RunReaper's).
 * While runs stream, what they have shown is checkpointed (at most every CHECKPOINT_MS, one
 * statement for all of them), so a run whose instance is killed keeps it. A run whose row another
 * instance ended or took over is told so by the first renewal or checkpoint after it; a run whose
 * lease the database does not renew (it is down or frozen) is told to stop before the lease lapses.
 * Renewals go through a connection of their own (LeaseConnection); whatever their timing, a run
 * another replica took over can write nothing more (docs/durable-runs.md, "One writer per run").
 */
@Injectable()
export class RunLeases implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunLeases.name);
  private readonly held = new Map<string, Held>();
  private timers: NodeJS.Timeout[] = [];
  /**
   * The renewal or checkpoint in flight. Each locks the rows of many runs, in no set order: two at
   * once deadlock (seen under load, and a renewal that loses may stop runs), so they take turns.
   */
  private writing: Promise<void> | undefined;
  /** A renewal or a checkpoint waiting for its turn: the next tick does not queue another of its kind. */
  private renewalWaiting = false;
  private checkpointWaiting = false;
  /** When the renewal waiting or in flight was asked for (a tick), until it is answered. */
  private renewalAskedAt: number | undefined;
  /** The last renewal failed (the database refused or could not be reached). */
  private renewalFailing = false;
  /** When the renewal timer last fired: a long gap since means this process did not run. */
  private lastTick: number | undefined;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly runs: RunsRepository,
  ) {}

  get leaseMs(): number {
    return this.config.runLeaseMs;
  }

  private get renewEveryMs(): number {
    return Math.max(100, Math.floor(this.leaseMs / 3));
  }

  onApplicationBootstrap(): void {
    const every = (ms: number, fn: () => Promise<void>) => {
      const timer = setInterval(() => void fn(), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.renewEveryMs, () => this.renew());
    every(Math.min(CHECKPOINT_MS, Math.max(100, Math.floor(this.leaseMs / 3))), () => this.checkpoint());
  }

  onModuleDestroy(): void {
    this.timers.forEach(clearInterval);
    this.timers = [];
  }

  hold(runId: string, holder: LeaseHolder): void {
    this.held.set(runId, { holder, written: 0, stepsWritten: 0, since: Date.now(), unrenewable: false });
  }

  /** The run's end is decided: its lease is no longer renewed here (its end statement ends it). */
  release(runId: string, holder: LeaseHolder): void {
    if (this.held.get(runId)?.holder === holder) this.held.delete(runId);
  }

  private async renew(): Promise<void> {
    const now = Date.now();
    // Time this process did not run (a pause, a starved CPU) is not the database's: it gets a fresh
    // half lease to answer, and the fence keeps a lease that lapsed meanwhile safe.
    const ran = this.lastTick === undefined || now - this.lastTick <= 2 * this.renewEveryMs;
    this.lastTick = now;
    if (ran) this.warnUnrenewable(now);
    else if (this.renewalAskedAt !== undefined) this.askedAt(now);
    if (this.renewalWaiting || !this.held.size) return;
    this.renewalWaiting = true;
    if (this.renewalAskedAt === undefined) this.askedAt(Date.now());
    await this.inTurn(() => {
      this.renewalWaiting = false;
      return this.renewHeld(Date.now());
    });
  }

  /**
   * A renewal is asked at `at`: half a lease later, unanswered, its runs are told (warnUnrenewable),
   * then and not at the next tick. The renewal was asked up to a tick after the last one answered, so
   * a check only at ticks told them as late as the lease's end; this leaves them a sixth of a lease
   * before it lapses. A timer that fires over a tick late says this process did not run (a pause):
   * the next tick asks again and arms another.
   */
  private askedAt(at: number): void {
    this.renewalAskedAt = at;
    const half = this.leaseMs / 2;
    setTimeout(() => {
      const now = Date.now();
      if (this.renewalAskedAt === at && now - at <= half + this.renewEveryMs) this.warnUnrenewable(now);
    }, half + 1).unref();
  }

  /**
   * Tells the runs whose lease may lapse because the database does not renew it: a renewal asked for
   * more than half a lease ago has not been answered (the database is down or frozen), or renewals
   * fail and the run's last one is older than that. A renewal merely sent late (a busy event loop)
   * stops nothing: should the lease lapse meanwhile and another replica take the run, every write of
   * this one is refused (the attempt fences them) and its readers follow the other.
   */
  private warnUnrenewable(now: number): void {
    const half = this.leaseMs / 2;
    const stuck = this.renewalAskedAt !== undefined && now - this.renewalAskedAt > half;
    for (const held of this.held.values()) {
      if (held.unrenewable || !(stuck || (this.renewalFailing && now - held.since > half))) continue;
      held.unrenewable = true;
      held.holder.leaseUnrenewable();
    }
  }

  private async renewHeld(sent: number): Promise<void> {
    const ids = [...this.held.keys()];
    try {
      const active = await this.runs.renewLeases(
        [...this.held].map(([id, { holder }]) => ({
          id,
          resourceId: holder.resourceId,
          attempt: holder.attempt,
        })),
        this.leaseMs,
      );
      this.renewalFailing = false;
      this.renewed(active, sent);
      this.notifyLost(ids, active);
    } catch (err) {
      this.renewalFailing = true;
      this.log.warn(`lease renewal failed: ${(err as Error).message}`);
    } finally {
      this.renewalAskedAt = undefined;
    }
  }

  /** Runs `write` once no other renewal or checkpoint is in flight. */
  private async inTurn(write: () => Promise<void>): Promise<void> {
    while (this.writing) await this.writing;
    const done = write().finally(() => (this.writing = undefined));
    this.writing = done;
    await done;
  }

  /** Writes the checkpoints of the runs that showed something since their last one. */
  private async checkpoint(): Promise<void> {
    if (this.checkpointWaiting) return;
    this.checkpointWaiting = true;
    await this.inTurn(() => {
      this.checkpointWaiting = false;
      return this.checkpointHeld();
    });
  }

  private async checkpointHeld(): Promise<void> {
    const due: Array<[string, Held, number, number]> = [];
    const checkpoints: Array<HeldRun & SavedCheckpoint> = [];
    for (const [runId, held] of this.held) {
      const shown = held.holder.shownCount;
      if (shown === held.written) continue;
      const { messages, steps } = held.holder.checkpoint();
      // Progress only when a step completed since: it does not change in between.
      const progress = steps && steps.count > held.stepsWritten ? steps.messages : undefined;
      // Nothing to keep yet: no write.
      if (!messages?.slots && !progress) held.written = shown;
      else {
        checkpoints.push({
          id: runId,
          resourceId: held.holder.resourceId,
          attempt: held.holder.attempt,
          ...(messages?.slots ? { messages } : {}),
          ...(progress ? { progress, ...spentSoFar(steps?.usage) } : {}),
        });
        due.push([runId, held, shown, steps?.count ?? 0]);
      }
    }
    if (!due.length) return;
    const sent = Date.now();
    try {
      const active = await this.runs.saveCheckpoints(checkpoints, this.leaseMs);
      this.renewed(active, sent);
      for (const [, held, shown, steps] of due) {
        held.written = shown;
        held.stepsWritten = steps;
      }
      this.notifyLost(
        due.map(([runId]) => runId),
        active,
      );
    } catch (err) {
      this.log.warn(`checkpointing runs failed: ${(err as Error).message}`);
    }
  }

  /** A renewal sent at `sent` reached the database for these runs. */
  private renewed(ids: string[], sent: number): void {
    for (const id of ids) {
      const held = this.held.get(id);
      if (held) held.since = Math.max(held.since, sent);
    }
  }

  /** Stops the runs among `ids` (still held here) that the database no longer has active. */
  private notifyLost(ids: string[], active: string[]): void {
    if (active.length === ids.length) return;
    const alive = new Set(active);
    for (const runId of ids) {
      if (alive.has(runId)) continue;
      const held = this.held.get(runId);
      if (!held) continue;
      this.log.warn(`run ${runId} was ended by another instance (its lease lapsed): stopping it`);
      held.holder.leaseLost();
    }
  }
}
