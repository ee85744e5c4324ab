import { CanActivate, ExecutionContext, Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply } from 'fastify';
import { BlockList } from 'node:net';
import { DomainError } from '../common/errors';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { HOST_OPTIONS, type HostOptions } from '../config/host';
import { isListed, trustedProxyList } from './addresses';
import { JwtVerifier, TokenRejected } from './jwt-verifier';
import {
  ANONYMOUS_RESOURCE,
  isResourceId,
  Principal,
  RESOURCE_RULE,
  RequestWithPrincipal,
  withBearerToken,
} from './principal';
import { IS_PUBLIC } from './public.decorator';

type IncomingRequest = RequestWithPrincipal & {
  method: string;
  body?: unknown;
  query?: Record<string, unknown>;
  /**
   * Node's request, whose `headersDistinct` has every value of a header sent several times (its
   * `headers` joins them with `, `, or keeps the first Authorization): owner headers are read there.
   */
  raw: { headersDistinct: Record<string, string[] | undefined> };
  socket?: { remoteAddress?: string };
};

/** A header value that is not text in the encoding expected: named, and never a valid owner. */
const UNDECODABLE = Symbol('undecodable owner header');

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * How an owner is written in a header (docs/identity-headers.md): `utf8`, the text as sent (raw UTF-8
 * beyond ASCII); `percent`, ASCII percent-encoded UTF-8; `utf8-or-percent`, either, told apart by a
 * byte beyond ASCII (X-Resource-Id, which browsers can only send percent-encoded).
 */
type HeaderEncoding = 'utf8' | 'percent' | 'utf8-or-percent';

/**
 * The text of an owner sent in a header, or undefined when it is not text in `encoding`. Node reads
 * header bytes as latin1, so a value with bytes beyond ASCII is raw UTF-8 (what proxies forward for a
 * `josé`); a percent-encoded value is ASCII (`jos%C3%A9`, a `%` itself as `%25`). Bytes that are not
 * UTF-8, a broken escape, or a raw byte where percent-encoding is expected name nobody.
 */
function headerText(value: string, encoding: HeaderEncoding): string | undefined {
  const raw = /[^\x20-\x7E]/.test(value);
  try {
    if (raw) return encoding === 'percent' ? undefined : utf8.decode(Buffer.from(value, 'latin1'));
    return encoding === 'utf8' ? value : decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/** A header sent more than once, where one value is expected: never a value, never an owner. */
const REPEATED = Symbol('repeated header');

/** A header that must come once: its value, undefined when absent, REPEATED when it came several times. */
function onceOnly(req: IncomingRequest, name: string): string | undefined | typeof REPEATED {
  const values = req.raw.headersDistinct[name] ?? [];
  return values.length > 1 ? REPEATED : values[0];
}

/** The owner X-Resource-Id names: undefined when absent, UNDECODABLE when not an owner's text. */
function resourceHeader(req: IncomingRequest): unknown {
  const value = onceOnly(req, 'x-resource-id');
  if (value === REPEATED) {
    throw new DomainError('VALIDATION_FAILED', 'X-Resource-Id is sent more than once', [
      { path: 'x-resource-id', message: 'must be sent once' },
    ]);
  }
  return value === undefined ? undefined : (headerText(value, 'utf8-or-percent') ?? UNDECODABLE);
}

/** The places a client may name an owner (docs/protocol.md#forwardedprops and #owners), with the value sent there, if any. */
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
    ['x-resource-id', resourceHeader(req)],
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
  if (!isResourceId(value)) {
    const encoding = path === 'x-resource-id' ? ', as UTF-8 or percent-encoded UTF-8' : '';
    throw new DomainError('VALIDATION_FAILED', 'Invalid resourceId', [
      { path, message: `must be ${RESOURCE_RULE}${encoding}` },
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
 * Resolves who is calling, once per request: by a host app's `principal` option when it gave one
 * (docs/agents.md#in-your-own-nest-app), else by AUTH_MODE (docs/protocol.md#owners):
 * - `none`: `forwardedProps.resourceId` (or `.memory.resource`), a body's `resourceId`, the `resourceId` query parameter or
 *   `X-Resource-Id` (raw or percent-encoded UTF-8); else `anonymous`, whose routes naming a thread or run id find it
 *   whoever owns it;
 * - `jwt`: the RESOURCE_ID_CLAIM of a verified bearer token (one Authorization header);
 * - `header`: the AUTH_HEADER set by an authenticating proxy, only from TRUSTED_PROXIES, sent once, as
 *   sent or percent-decoded (AUTH_HEADER_PERCENT_DECODING).
 * In every mode an owner is an `isResourceId`: one spelling, never a percent-escape (docs/identity-headers.md).
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
    @Optional() @Inject(HOST_OPTIONS) private readonly host: HostOptions = {},
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
    const { mode } = this.config.auth;
    if (this.host.principal) {
      const requested = requestedResources(req);
      refuseTwoOwnersInBody(requested);
      req.principal = scopeToCaller(
        await this.fromHost(req),
        requested,
        req.method === 'GET' || req.method === 'HEAD',
      );
      return true;
    }
    if (mode === 'none') {
      const requested = requestedResources(req);
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
    const requested = requestedResources(req);
    refuseTwoOwnersInBody(requested);
    req.principal = scopeToCaller(caller, requested, req.method === 'GET' || req.method === 'HEAD');
    return true;
  }

  /** The caller as the host app's `principal` option maps its request; none is a 401. */
  private async fromHost(req: IncomingRequest): Promise<Principal> {
    const caller = await this.host.principal!(req);
    if (!caller) throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    return {
      resourceId: checkedResourceId('principal', caller.resourceId),
      admin: caller.admin === true,
      ...(caller.claims ? { claims: caller.claims } : {}),
    };
  }

  private async fromBearer(req: IncomingRequest, reply: FastifyReply): Promise<Principal> {
    // Node keeps the first of two Authorization headers: two credentials are none.
    const header = onceOnly(req, 'authorization');
    const token = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header)?.[1] : undefined;
    if (!token) {
      void reply.header('www-authenticate', 'Bearer realm="io-bridge"');
      throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    }
    try {
      return withBearerToken(await this.jwt.authenticate(token), token);
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
    // Node joins two of a header with `, `: `bob, alice` would be one more owner, so two are refused.
    const sent = onceOnly(req, header);
    const encoding = this.config.auth.headerPercentDecoding ? 'percent' : 'utf8';
    const value = typeof sent === 'string' ? headerText(sent, encoding) : sent;
    if (!isResourceId(value)) {
      const why = value === REPEATED ? 'was sent more than once' : 'is missing or not a valid resourceId';
      this.log.warn(`Identity header '${header}' from ${this.peer(req)} ${why}`);
      throw new DomainError('UNAUTHENTICATED', 'Authentication required');
    }
    return { resourceId: value, admin: false };
  }

  private peer(req: IncomingRequest): string {
    return req.socket?.remoteAddress ?? 'unknown peer';
  }
}
