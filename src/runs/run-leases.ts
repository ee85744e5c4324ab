import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { RunsRepository } from './runs.repository';

/**
 * Keeps the leases of this instance's runs fresh, and ends the runs of instances that died (their
 * leases lapsed) as INTERRUPTED, at start-up and then periodically, so no thread stays busy forever.
 */
@Injectable()
export class RunLeases implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunLeases.name);
  private readonly held = new Set<string>();
  private timers: NodeJS.Timeout[] = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly runs: RunsRepository,
  ) {}

  get leaseMs(): number {
    return this.config.runLeaseMs;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reap();
    const every = (ms: number, fn: () => Promise<void>) => {
      const timer = setInterval(() => void fn(), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(100, Math.floor(this.leaseMs / 3)), () => this.renew());
    every(Math.max(100, Math.floor(this.leaseMs / 2)), () => this.reap());
  }

  onModuleDestroy(): void {
    this.timers.forEach(clearInterval);
    this.timers = [];
  }

  hold(runId: string): () => void {
    this.held.add(runId);
    return () => this.held.delete(runId);
  }

  private async renew(): Promise<void> {
    try {
      await this.runs.renewLeases([...this.held], this.leaseMs);
    } catch (err) {
      this.log.warn(`lease renewal failed: ${(err as Error).message}`);
    }
  }

  private async reap(): Promise<void> {
    try {
      const ended = await this.runs.reapLapsed();
      if (ended.length)
        this.log.warn(`marked ${ended.length} run(s) of stopped instances INTERRUPTED: ${ended.join(', ')}`);
    } catch (err) {
      this.log.warn(`reaping lapsed runs failed: ${(err as Error).message}`);
    }
  }
}
