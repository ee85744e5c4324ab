import { Global, Inject, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { isLoopbackHost } from './addresses';
import { JwtVerifier } from './jwt-verifier';
import { PrincipalGuard } from './principal.guard';

/** The warning for a service anyone on the network can use as any owner, or undefined when it is not one. */
export function openAccessWarning(config: AppConfig): string | undefined {
  if (config.auth.mode !== 'none' || isLoopbackHost(config.host)) return undefined;
  return (
    `AUTHENTICATION IS OFF on HOST=${config.host}: anyone who can reach this port can read and write ` +
    'any owner\'s threads by naming its resourceId. Set AUTH_MODE=jwt or AUTH_MODE=header (see docs/configuration.md, "Authentication").'
  );
}

/** Global: every io-bridge controller's guard (IoBridgeRoutes) needs the verifier. */
@Global()
@Module({ providers: [JwtVerifier, PrincipalGuard], exports: [JwtVerifier, PrincipalGuard] })
export class AuthModule implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly jwt: JwtVerifier,
  ) {}

  onApplicationBootstrap(): void {
    const warning = openAccessWarning(this.config);
    if (warning) new Logger('Auth').warn(warning);
    if (this.config.auth.mode === 'jwt') this.jwt.warmUp();
  }
}
