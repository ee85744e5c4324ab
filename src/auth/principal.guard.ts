import { CanActivate, ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { BlockList } from 'node:net';
import { DomainError } from '../common/errors';
import { ID_RULE } from '../common/ids';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { isListed, trustedProxyList } from './addresses';
import { JwtVerifier, TokenRejected } from './jwt-verifier';
import { ANONYMOUS_RESOURCE, Principal, RESOURCE_ID, RequestWithPrincipal } from './principal';
import { IS_PUBLIC } from './public.decorator';

type IncomingRequest = RequestWithPrincipal & {
  method: string;
  body?: unknown;
  query?: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  socket?: { remoteAddress?: string };
};

/** A header value that is neither raw UTF-8 nor percent-encoded UTF-8: named, and never a valid owner. */
const UNDECODABLE = Symbol('undecodable identity header');

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * An owner sent in a header (the identity header of `AUTH_MODE=header`, and X-Resource-Id). Node reads
 * header bytes as latin1, so a value with bytes beyond ASCII is raw UTF-8 (what proxies forward for a
 * `josé`), decoded as such; an ASCII value is percent-decoded (`jos%C3%A9`, a `%` itself as `%25`), as a
 * query string is. Bytes that are not UTF-8, or a broken escape, name nobody.
 */
export function decodeIdentityHeader(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    if (/[^\x20-\x7E]/.test(value)) return utf8.decode(Buffer.from(value, 'latin1'));
    return decodeURIComponent(value);
  } catch {
    return UNDECODABLE;
  }
}

/** The places a client may name an owner (CONTRACT sections 6 and 7), with the value sent there, if any. */
function requestedResources(req: IncomingRequest): Array<[string, unknown]> {
  type Props = { resourceId?: unknown; memory?: { resource?: unknown } };
  const body = req.body as { forwardedProps?: Props; resourceId?: unknown } | undefined;
  const props = body?.forwardedProps;
  return [
    ['forwardedProps.resourceId', props?.resourceId],
    ['forwardedProps.memory.resource', props?.memory?.resource],
    // `POST /threads {resourceId}`: Mastra's client names the owner in the body.
    ['body.resourceId', body?.resourceId],
    ['resourceId', req.query?.resourceId],
    ['x-resource-id', decodeIdentityHeader(req.headers['x-resource-id'])],
  ];
}

/**
 * The run's two owner fields (`resourceId`, and `memory.resource` as io.Assist sends it) must agree:
 * a body claiming two owners is a client bug, 400 in every mode, whoever the caller is.
 */
function refuseTwoOwnersInBody(requested: Array<[string, unknown]>): void {
  const named = new Map(requested);
  const path = 'forwardedProps.memory.resource';
  const [resourceId, resource] = [named.get('forwardedProps.resourceId'), named.get(path)];
  if (resourceId !== undefined && resource !== undefined && resourceId !== resource) {
    throw new DomainError('VALIDATION_FAILED', 'forwardedProps names two different owners', [
      { path, message: 'must be absent or equal to forwardedProps.resourceId' },
    ]);
  }
}

function checkedResourceId(path: string, value: unknown): string {
  if (typeof value !== 'string' || !RESOURCE_ID.test(value)) {
    const encoding = path === 'x-resource-id' ? ', as UTF-8 or percent-encoded UTF-8' : '';
    throw new DomainError('VALIDATION_FAILED', 'Invalid resourceId', [
      { path, message: `must be ${ID_RULE}${encoding}` },
    ]);
  }
  return value;
}

/**
 * With authentication on, a resourceId the client names may only repeat the caller's own, else 403;
 * an admin may name another owner on a read (GET), which lists that owner's threads.
 */
export function scopeToCaller(
  caller: Principal,
  requested: Array<[string, unknown]>,
  read: boolean,
): Principal {
  const named = requested.filter(([, value]) => value !== undefined);
  const foreign = named.find(([, value]) => value !== caller.resourceId);
  if (!foreign) return caller;
  const [path, value] = foreign;
  if (caller.admin && read && named.every(([, other]) => other === value)) {
    return { ...caller, readAs: checkedResourceId(path, value) };
  }
  throw new DomainError('FORBIDDEN', "The resourceId is not the authenticated caller's", [
    { path, message: "must be absent or equal to the authenticated caller's resource" },
  ]);
}

/**
 * Resolves who is calling, once per request, by AUTH_MODE (CONTRACT section 7):
 * - `none`: `forwardedProps.resourceId` (or `.memory.resource`), a body's `resourceId`, the `resourceId` query parameter or
 *   `X-Resource-Id` (raw or percent-encoded UTF-8); else `anonymous`, whose routes naming a thread or run id find it
 *   whoever owns it;
 * - `jwt`: the RESOURCE_ID_CLAIM of a verified bearer token;
 * - `header`: the AUTH_HEADER set by an authenticating proxy, only from TRUSTED_PROXIES.
 * Routes marked @Public() are skipped and get no principal.
 */
@Injectable()
export class PrincipalGuard implements CanActivate {
  private readonly log = new Logger('Auth');
  private readonly proxies: BlockList;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly reflector: Reflector,
    private readonly jwt: JwtVerifier,
  ) {
    this.proxies = trustedProxyList(config.auth.trustedProxies);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    const req = context.switchToHttp().getRequest<IncomingRequest>();
    const requested = requestedResources(req);
    const { mode } = this.config.auth;
    if (mode === 'none') {
      refuseTwoOwnersInBody(requested);
      const [path, value] = requested.find(([, v]) => v !== undefined) ?? [];
      // No secret to protect: without an owner named, an id alone finds its item (lists stay anonymous's).
      req.principal =
        path === undefined
          ? { resourceId: ANONYMOUS_RESOURCE, admin: false, anyOwnerById: true }
          : { resourceId: checkedResourceId(path, value), admin: false };
      return true;
    }
    const caller =
      mode === 'jwt'
        ? await this.fromBearer(req, context.switchToHttp().getResponse<FastifyReply>())
        : this.fromProxyHeader(req);
    refuseTwoOwnersInBody(requested);
    req.principal = scopeToCaller(caller, requested, req.method === 'GET' || req.method === 'HEAD');
    return true;
  }

  private async fromBearer(req: IncomingRequest, reply: FastifyReply): Promise<Principal> {
    const header = req.headers.authorization;
    const token = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header)?.[1] : undefined;
    if (!token) {
      void reply.header('www-authenticate', 'Bearer realm="io-bridge"');
      throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    }
    try {
      return await this.jwt.authenticate(token);
    } catch (err) {
      if (!(err instanceof TokenRejected)) throw err;
      this.log.warn(`Bearer token rejected (${this.peer(req)} ${req.method}): ${err.message}`);
      void reply.header('www-authenticate', 'Bearer realm="io-bridge", error="invalid_token"');
      throw new DomainError('UNAUTHENTICATED', 'Invalid token');
    }
  }

  private fromProxyHeader(req: IncomingRequest): Principal {
    const { header } = this.config.auth;
    // The peer of the TCP connection, never X-Forwarded-For: only a trusted proxy may assert identity.
    if (!isListed(this.proxies, req.socket?.remoteAddress)) {
      this.log.warn(`Identity header refused: ${this.peer(req)} is not in TRUSTED_PROXIES`);
      throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    }
    const value = decodeIdentityHeader(req.headers[header]);
    if (typeof value !== 'string' || !RESOURCE_ID.test(value)) {
      this.log.warn(
        `Identity header '${header}' from ${this.peer(req)} is missing or not a valid resourceId`,
      );
      throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    }
    return { resourceId: value, admin: false };
  }

  private peer(req: IncomingRequest): string {
    return req.socket?.remoteAddress ?? 'unknown peer';
  }
}
