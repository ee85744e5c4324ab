import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './config';
import { HOOKED_ROUTES, HOST_OPTIONS, HostOptions } from './host';

export const APP_CONFIG = Symbol('APP_CONFIG');

/** Provides the one validated configuration (loaded by the caller so tests can pass their own) and what a host app gave. */
@Global()
@Module({})
export class ConfigModule {
  /** `host`: what a host app gave (IoBridgeModule.forRoot); none for the standalone service. */
  static forRoot(config: AppConfig, host?: HostOptions): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: HOST_OPTIONS, useValue: host ?? {} },
        { provide: HOOKED_ROUTES, useValue: host ? 'io-bridge' : 'all' },
      ],
      exports: [APP_CONFIG, HOST_OPTIONS, HOOKED_ROUTES],
    };
  }
}
