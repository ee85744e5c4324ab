import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './config';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Provides the one validated configuration; loaded by the caller so tests can pass their own. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}
