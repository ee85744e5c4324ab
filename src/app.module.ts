import { DynamicModule, Module } from '@nestjs/common';
import { AppConfig } from './config/config';
import { ioBridgeImports } from './io-bridge.module';
import { LogDestination } from './ops/logging';

/** The standalone service: io-bridge's modules with its configuration (app.factory.ts builds the rest). */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logDestination?: LogDestination): DynamicModule {
    return { module: AppModule, imports: ioBridgeImports(config, undefined, logDestination) };
  }
}
