import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { PgNotifications } from '../../database/pg-notifications.service';
import { DrainState } from '../../ops/drain.service';
import { HANDED_OVER_CHANNEL, LapsedRunsRepository } from '../storage/lapsed-runs.repository';
import { FrontendToolResults } from '../tools/frontend-tool-results';
import { RunContinuations } from './run-continuations';

/** A reap announced (runs handed over) waits this long for more announcements of the same drain. */
const ANNOUNCED_REAP_MS = 20;

/**
 * Runs outlive their replica (docs/durable-runs.md#continuing-a-run-on-another-replica). The reaper: runs whose lease lapsed (their
 * replica died, or handed them over) are claimed and continued here (RunContinuations); runs out of
 * attempts end INTERRUPTED (LapsedRunsRepository). It runs at start-up, when the next lease lapses
 * (at least every half lease), at once when a draining replica says it handed runs over, and at once
 * when a result posted here woke a parked run.
 */
@Injectable()
export class RunReaper implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunReaper.name);
  private timer: NodeJS.Timeout | undefined;
  private reaping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly lapsed: LapsedRunsRepository,
    private readonly continuations: RunContinuations,
    private readonly notifications: PgNotifications,
    private readonly drain: DrainState,
    private readonly results: FrontendToolResults,
  ) {}

  onModuleInit(): void {
    this.notifications.on(HANDED_OVER_CHANNEL, () => this.schedule(ANNOUNCED_REAP_MS));
    this.results.onParkedRunWoken(() => this.schedule(0));
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reap();
  }

  onModuleDestroy(): void {
    this.stopped = true;
    clearTimeout(this.timer);
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
      for (const run of reaped.continued) await this.continuations.continue(run);
      // Right after the next lease lapses, so a dead replica's runs go on within about a lease.
      if (reaped.nextLapseMs !== undefined) next = Math.min(next, reaped.nextLapseMs + 10);
    } catch (err) {
      // A reap in flight while the application closes loses its connection: nothing to report.
      if (!this.stopped) this.log.warn(`reaping lapsed runs failed: ${(err as Error).message}`);
    }
    if (!this.drain.isDraining) this.schedule(next);
  }
}
