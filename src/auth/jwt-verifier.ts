import { Inject, Injectable, Logger } from '@nestjs/common';
import { createRemoteJWKSet, errors, jwtVerify, JWTPayload, JWTVerifyGetKey } from 'jose';
import { DomainError } from '../common/errors';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { claimAt, hasRole } from './claims';
import { isResourceId, Principal, RESOURCE_RULE } from './principal';

/** Asymmetric signatures only: never `none`, never an HMAC whose "secret" could be the published public key. */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

const FETCH_TIMEOUT_MS = 5000;

/** jose codes that mean the identity provider failed us, not that the token is bad. */
const IDP_FAILURES = new Set(['ERR_JOSE_GENERIC', 'ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID']);

/** A token this service will not accept; the message is the reason for the log, never for the client. */
export class TokenRejected extends Error {}

/**
 * AUTH_MODE=jwt (docs/protocol.md#owners): verifies bearer tokens against the issuer's JWKS. The JWKS URI
 * is OIDC_JWKS_URI or comes from OIDC discovery, fetched once; jose caches the keys and refetches
 * them when a token names an unknown `kid` (at most once per 30 s cooldown).
 */
@Injectable()
export class JwtVerifier {
  private readonly log = new Logger('Auth');
  private keys?: Promise<JWTVerifyGetKey>;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  /** The caller a token proves; TokenRejected when it proves nothing, SERVICE_UNAVAILABLE when the IdP cannot be reached. */
  async authenticate(token: string): Promise<Principal> {
    const { auth } = this.config;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await this.jwks(), {
        issuer: auth.oidcIssuer,
        audience: auth.oidcAudience,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: auth.clockToleranceS,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      if (err instanceof errors.JOSEError && !IDP_FAILURES.has(err.code)) {
        throw new TokenRejected(`${err.code}: ${err.message}`);
      }
      if (!(err instanceof DomainError)) this.log.error(`JWKS unavailable: ${describe(err)}`);
      throw unavailable();
    }
    const resourceId = claimAt(payload, auth.resourceIdClaim);
    // The rule of every mode: a `%61lice` claim is refused, not a second `alice` (docs/identity-headers.md).
    if (!isResourceId(resourceId)) {
      throw new TokenRejected(`claim '${auth.resourceIdClaim}' is missing or not ${RESOURCE_RULE}`);
    }
    const admin =
      auth.adminRole !== undefined && hasRole(claimAt(payload, auth.adminRoleClaim), auth.adminRole);
    const claims = Object.fromEntries(
      auth.contextClaims
        .map((name) => [name, claimAt(payload, name)] as const)
        .filter(([, value]) => value !== undefined),
    );
    return { resourceId, admin, ...(Object.keys(claims).length ? { claims } : {}) };
  }

  /** Resolves the key set at boot, so a wrong issuer shows in the log before the first request. */
  warmUp(): void {
    this.jwks().catch(() => undefined);
  }

  /** The remote key set, created once; a failed discovery is retried by the next request. */
  private jwks(): Promise<JWTVerifyGetKey> {
    if (!this.keys) {
      const keys = this.jwksUri().then((uri) =>
        createRemoteJWKSet(uri, { timeoutDuration: FETCH_TIMEOUT_MS }),
      );
      this.keys = keys;
      keys.catch((err: unknown) => {
        if (this.keys === keys) this.keys = undefined;
        this.log.error(`OIDC discovery failed: ${describe(err)}`);
      });
    }
    return this.keys.catch(() => Promise.reject(unavailable()));
  }

  private async jwksUri(): Promise<URL> {
    const { oidcJwksUri, oidcIssuer } = this.config.auth;
    if (oidcJwksUri) return new URL(oidcJwksUri);
    const url = `${String(oidcIssuer).replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const res = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(`${url} answered ${res.status}`);
    const doc = (await res.json()) as { jwks_uri?: unknown };
    if (typeof doc?.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`);
    this.log.log(`JWKS from OIDC discovery: ${doc.jwks_uri}`);
    return new URL(doc.jwks_uri);
  }
}

const unavailable = () => new DomainError('SERVICE_UNAVAILABLE', 'Authentication is unavailable');

const describe = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
