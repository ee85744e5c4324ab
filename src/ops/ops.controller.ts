import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Public } from '../auth/public.decorator';
import { PgNotifications } from '../database/pg-notifications.service';
import { DrainState } from './drain.service';
import { Metrics } from './metrics.service';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

/** Each readiness check answers within this, whatever the database does (probes time out at 1 s). */
const READY_CHECK_TIMEOUT_MS = 800;

/** Health for Kubernetes probes and Prometheus metrics: outside the prefix, open to anyone. */
@ApiTags('operations')
@Public()
@Controller()
@IoBridgeRoutes()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly notifications: PgNotifications,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly drain: DrainState,
    private readonly metrics: Metrics,
  ) {}

  /** Once every migration this build knows is applied, it stays so: no need to ask again. */
  private migrationsApplied = false;

  /** The process is up. */
  @Get('health/live')
  @ApiOperation({ summary: 'Liveness: the process is up' })
  @HealthCheck()
  live() {
    return this.health.check([]);
  }

  /** Ready for traffic: database reachable, migrations applied, not shutting down. */
  @Get('health/ready')
  @ApiOperation({ summary: 'Readiness: database reachable, migrations applied, not draining' })
  @HealthCheck()
  ready() {
    return this.health.check([
      () => {
        const session = this.indicators.check('shutdown');
        return this.drain.isDraining ? session.down({ message: 'draining' }) : session.up();
      },
      // On the LISTEN connection, not the pool: a probe must not queue behind requests starving it.
      async () => {
        const session = this.indicators.check('database');
        try {
          await this.notifications.ping(READY_CHECK_TIMEOUT_MS);
          return session.up();
        } catch {
          return session.down({ message: 'unavailable' });
        }
      },
      async () => {
        const session = this.indicators.check('migrations');
        if (this.migrationsApplied) return session.up();
        try {
          const pending = await withTimeout(this.dataSource.showMigrations(), READY_CHECK_TIMEOUT_MS);
          this.migrationsApplied = !pending;
          return pending ? session.down({ message: 'pending' }) : session.up();
        } catch {
          return session.down({ message: 'unknown: database unavailable' });
        }
      },
    ]);
  }

  @Get('metrics')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiExcludeEndpoint()
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}

/** `promise`, or a rejection after `ms` (the work itself goes on and ends with its own timeouts). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
