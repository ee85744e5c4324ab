import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool, QueryResultRow } from 'pg';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { pgSession } from './data-source';

/**
 * A connection of its own for the statements that keep this replica's run leases (renewals and
 * checkpoints): they never queue behind the pool's other work (streams, claims, event writes), so a
 * busy replica's leases are renewed on time (docs/durable-runs.md, "One writer per run"). A pool of
 * one, so a lost connection is replaced on the next statement.
 */
@Injectable()
export class LeaseConnection implements OnModuleDestroy {
  private readonly pool: Pool;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.pool = new Pool({
      connectionString: config.database.url,
      max: 1,
      application_name: 'io-bridge leases',
      ...pgSession(config.database.timeouts),
    });
    // An idle connection that fails is dropped by the pool; the next statement opens another.
    this.pool.on('error', () => undefined);
  }

  async query<T extends QueryResultRow>(text: string, values: unknown[]): Promise<T[]> {
    return (await this.pool.query<T>(text, values)).rows;
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
