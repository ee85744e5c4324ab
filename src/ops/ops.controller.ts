import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { Public } from '../auth/public.decorator';
import { DrainState } from './drain.service';
import { Metrics } from './metrics.service';

/** Health for Kubernetes probes and Prometheus metrics: outside the prefix, open to anyone. */
@ApiTags('operations')
@Public()
@Controller()
export class OpsController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly db: TypeOrmHealthIndicator,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly drain: DrainState,
    private readonly metrics: Metrics,
  ) {}

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
      () => this.db.pingCheck('database', { timeout: 2000 }),
      async () => {
        const session = this.indicators.check('migrations');
        try {
          return (await this.dataSource.showMigrations())
            ? session.down({ message: 'pending' })
            : session.up();
        } catch (err) {
          return session.down({ message: (err as Error).message });
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
