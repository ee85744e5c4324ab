import { DynamicModule, Module } from '@nestjs/common';
import { AgentsModule } from './agents/agents.module';
import { AuthModule } from './auth/auth.module';
import { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { RunsModule } from './runs/runs.module';
import { ThreadsModule } from './threads/threads.module';
import { OpsModule } from './ops/ops.module';
import { UsageModule } from './usage/usage.module';
import { ThrottlerModule } from '@nestjs/throttler';
import { LoggerModule } from 'nestjs-pino';
import { LogDestination, loggingParams } from './ops/logging';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logDestination?: LogDestination): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot(
          loggingParams(config.logLevel, config.tracing.url !== undefined, undefined, logDestination),
        ),
        DatabaseModule,
        AuthModule,
        AgentsModule,
        ThreadsModule,
        RunsModule,
        UsageModule,
        OpsModule,
        ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: config.rateLimitPerMinute }] }),
      ],
    };
  }
}
