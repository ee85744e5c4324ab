import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { RunsRepository } from './runs.repository';

type Held = {
  /** When the last renewal that succeeded was sent (or the run was claimed): the lease runs from about then. */
  since: number;
  /** Called once when the lease may lapse before a renewal succeeds. */
  lost: () => void;
};

/**
 * Keeps the leases of this instance's runs fresh, and ends the runs of instances that died (their
 * leases lapsed) as INTERRUPTED, at start-up and then periodically, so no thread stays busy forever.
 * A run whose lease cannot be renewed (the database is down or frozen) is told to stop before the
 * lease lapses, so no other instance can take its thread while it still streams.
 */
@Injectable()
export class RunLeases implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(RunLeases.name);
  private readonly held = new Map<string, Held>();
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

  hold(runId: string, lost: () => void): () => void {
    const held = { since: Date.now(), lost };
    this.held.set(runId, held);
    return () => {
      if (this.held.get(runId) === held) this.held.delete(runId);
    };
  }

  private async renew(): Promise<void> {
    const sent = Date.now();
    // Renewals come every third of a lease: one older than half has missed one and may lapse before the next.
    for (const held of this.held.values()) {
      if (sent - held.since <= this.leaseMs / 2) continue;
      const lost = held.lost;
      held.lost = () => undefined;
      lost();
    }
    const ids = [...this.held.keys()];
    try {
      await this.runs.renewLeases(ids, this.leaseMs);
      for (const id of ids) {
        const held = this.held.get(id);
        if (held) held.since = Math.max(held.since, sent);
      }
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
