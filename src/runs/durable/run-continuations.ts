import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import { Principal } from '../../auth/principal';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { DrainState } from '../../ops/drain.service';
import { AguiEvent } from '../../protocol/agui-events';
import { RunAgentInputDto } from '../../protocol/run-agent-input.dto';
import { LiveRuns } from '../engine/live-runs';
import { RunPreparer } from '../engine/run-preparer';
import { RunsService } from '../runs.service';
import { RunEventsRepository } from '../storage/run-events.repository';
import { RunStreams } from '../stream/run-streams.service';
import { HANDED_OVER_CHANNEL, LapsedRun, LapsedRuns } from './lapsed-runs';
import { readStoredLog } from './stored-log';

/** A reap announced (runs handed over) waits this long for more announcements of the same drain. */
const ANNOUNCED_REAP_MS = 20;

/**
 * Runs outlive their replica. The reaper: runs whose lease lapsed (their replica died, or handed
 * them over) are claimed and continued here from their last completed step, under the same runId,
 * their log going on with the next id; runs out of attempts end INTERRUPTED (LapsedRuns). It runs at
 * start-up, when the next lease lapses (at least every half lease), and at once when a draining
 * replica says it handed runs over. The drain's side: handing this replica's runs over.
 */
@Injectable()
export class RunContinuations implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunContinuations.name);
  private timer: NodeJS.Timeout | undefined;
  private reaping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lapsed: LapsedRuns,
    private readonly preparer: RunPreparer,
    private readonly runs: RunsService,
    private readonly live: LiveRuns,
    private readonly streams: RunStreams,
    private readonly events: RunEventsRepository,
    private readonly notifications: PgNotifications,
    private readonly drain: DrainState,
  ) {}

  onModuleInit(): void {
    this.notifications.on(HANDED_OVER_CHANNEL, () => this.schedule(ANNOUNCED_REAP_MS));
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reap();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /**
   * Hands every run of this replica that is not ending over to the others (SIGTERM): their engines
   * stop without an end, their logs are stored, their leases lapse now, and the others are told.
   * Their readers here follow the log (RunStreams relays). Returns how many were handed over.
   */
  async handOverAll(): Promise<number> {
    const handed = this.live.handOverAll();
    if (!handed.length) return 0;
    for (const run of handed) this.streams.handOver(run.id);
    await this.streams.flush();
    const ids = await this.lapsed.handOver(handed);
    this.log.log(`handed ${ids.length} run(s) over to the other replicas`);
    return ids.length;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reap(), Math.max(0, ms));
    this.timer.unref();
  }

  /** One reap at a time; one asked for meanwhile runs right after. */
  private async reap(): Promise<void> {
    if (this.reaping) {
      this.again = true;
      return this.reaping;
    }
    this.reaping = this.reapOnce();
    try {
      await this.reaping;
    } finally {
      this.reaping = undefined;
    }
    if (this.again) {
      this.again = false;
      return this.reap();
    }
  }

  private async reapOnce(): Promise<void> {
    const leaseMs = this.config.runLeaseMs;
    let next = leaseMs / 2;
    try {
      // A draining replica takes nothing on; it still ends what cannot be continued.
      const reaped = await this.lapsed.reapLapsed({ continue: !this.drain.isDraining, leaseMs });
      if (reaped.ended.length)
        this.log.warn(
          `ended ${reaped.ended.length} run(s) of stopped instances INTERRUPTED: ${reaped.ended.join(', ')}`,
        );
      for (const run of reaped.continued) await this.continue(run);
      // Right after the next lease lapses, so a dead replica's runs go on within about a lease.
      if (reaped.nextLapseMs !== undefined) next = Math.min(next, reaped.nextLapseMs + 10);
    } catch (err) {
      this.log.warn(`reaping lapsed runs failed: ${(err as Error).message}`);
    }
    if (!this.drain.isDraining) this.schedule(next);
  }

  /**
   * Continues a run claimed here: its request prepared again, the history it saw plus the steps
   * completed, its log read to its end and what was left open closed; the step that was cut short
   * runs again. A run that cannot be prepared any more is left: its lease lapses again, and once out
   * of attempts it ends INTERRUPTED.
   */
  private async continue(run: LapsedRun): Promise<void> {
    try {
      const stored = run.input.request;
      const request = {
        ...stored,
        messages: stored.messages ?? [],
        resume: undefined,
      } as unknown as RunAgentInputDto;
      const principal: Principal = { ...run.input.principal };
      const { run: prepared, incoming } = this.preparer.prepare(request, principal);
      prepared.stateless = run.stateless;
      prepared.attempt = run.attempt;
      const carried = run.progress ?? [];
      const thread = run.stateless
        ? []
        : await this.lapsed.history(run.threadId, run.resourceId, prepared.lastMessages);
      const known = new Set(thread.map((m) => m.id));
      const history = [...thread, ...incoming.filter((m) => !known.has(m.id)), ...carried];
      const closing: AguiEvent[] = [];
      const log = await readStoredLog(run, this.events, (event) => closing.push(event));
      if (log.terminal) {
        this.log.warn(`run ${run.id}: its log is complete though the run is active; not continued`);
        return;
      }
      log.lifecycle.closeOpen();
      const events$ = this.runs.continued(prepared, history, carried, log.steps);
      this.streams.adopt(run.id, events$, log.last, closing);
      this.log.log(
        `run ${run.id}: continued here (attempt ${run.attempt}) after event ${log.last}, ${carried.length} message(s) of completed steps kept`,
      );
    } catch (err) {
      this.log.error(`run ${run.id}: could not be continued: ${(err as Error).message}`);
    }
  }
}
