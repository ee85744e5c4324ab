import { DynamicModule, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { LoggerModule } from 'nestjs-pino';
import { AgentsModule } from './agents/agents.module';
import { AuthModule } from './auth/auth.module';
import { AppConfig, loadConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import type { HostOptions } from './config/host';
import { DatabaseModule } from './database/database.module';
import { LogDestination, loggingParams } from './ops/logging';
import { OpsModule } from './ops/ops.module';
import { GracefulShutdown } from './runs/graceful-shutdown';
import { RunsModule } from './runs/runs.module';
import { ThreadsModule } from './threads/threads.module';
import { UsageModule } from './usage/usage.module';

/** The modules whose controllers are io-bridge's routes. */
const ROUTED_MODULES = [AgentsModule, ThreadsModule, RunsModule, UsageModule, OpsModule];

/**
 * io-bridge's modules, shared by the standalone service (AppModule) and {@link IoBridgeModule}:
 * `host` is what a host app gave, none for the service.
 */
export function ioBridgeImports(
  config: AppConfig,
  host?: HostOptions,
  logDestination?: LogDestination,
): NonNullable<DynamicModule['imports']> {
  return [
    ConfigModule.forRoot(config, host),
    LoggerModule.forRoot(
      loggingParams(
        config.logLevel,
        config.tracing.url !== undefined,
        undefined,
        logDestination,
        host ? config.prefix : undefined,
      ),
    ),
    DatabaseModule,
    AuthModule,
    ...ROUTED_MODULES,
    ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: config.rateLimitPerMinute }] }),
  ];
}

export type IoBridgeModuleOptions = HostOptions & {
  /**
   * io-bridge's configuration, as the variables of docs/configuration.md (`DATABASE_URL` is
   * required: a host app brings its database). Default: `process.env`.
   */
  env?: Record<string, string | undefined>;
};

/**
 * In a host app, the host's shutdown (`app.enableShutdownHooks()`, or `app.close()`) drains
 * io-bridge's runs first, as the service's main does on SIGTERM: they are handed over to the other
 * replicas, and streams still open after SHUTDOWN_GRACE_MS end RUN_MOVED
 * (docs/durable-runs.md#drain-handing-runs-over). Before any module is destroyed: Nest destroys
 * the modules a module imports after it, and io-bridge's database and leases are among them.
 */
@Injectable()
class HostedShutdown implements OnModuleDestroy {
  constructor(private readonly shutdown: GracefulShutdown) {}

  onModuleDestroy(): Promise<void> {
    return this.shutdown.drainRuns(true);
  }
}

/**
 * io-bridge in a Nest app of your own (docs/agents.md#in-your-own-nest-app): its routes under PREFIX
 * (default `/io-bridge`, health and metrics included), each with its own guard, pipes and error
 * envelope, so the host's routes keep theirs. `principal` maps a request, as the host's own guards
 * left it, to the caller; `mastra` is the instance whose agents are served.
 */
@Module({})
export class IoBridgeModule {
  static forRoot(options: IoBridgeModuleOptions = {}): DynamicModule {
    const { env, ...host } = options;
    const config = loadConfig(env ?? process.env, { projectAgents: host.mastra !== undefined });
    if (!config.database.url) throw new Error('IoBridgeModule: DATABASE_URL is required in a host app');
    return {
      module: IoBridgeModule,
      imports: [
        ...ioBridgeImports(config, host),
        RouterModule.register([{ path: config.prefix || '/', children: ROUTED_MODULES }]),
      ],
      providers: [HostedShutdown],
    };
  }
}
