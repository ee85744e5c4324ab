import { ExecutionContext, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DomainError } from '../common/errors';
import { loadConfig } from '../config/config';
import { JwtVerifier, TokenRejected } from './jwt-verifier';
import { ANY_OWNER, idScope, isResourceId, Principal } from './principal';
import { PrincipalGuard, scopeToCaller } from './principal.guard';
import { Public } from './public.decorator';

type FakeRequest = {
  method?: string;
  body?: unknown;
  query?: Record<string, unknown>;
  headers?: Record<string, string | string[] | undefined>;
  /** Node's request; made from `headers` unless given. */
  raw?: { headersDistinct: Record<string, string[]> };
  socket?: { remoteAddress?: string };
  principal?: Principal;
};

class ThreadsLike {
  list(): void {}
}

@Public()
class HealthLike {
  check(): void {}
}

class MetricsLike {
  @Public()
  metrics(): void {}
}

/**
 * Node's `headersDistinct` for these headers: an array here is a header sent that many times (Node's
 * `headers` joins them with `, `, or keeps the first Authorization).
 */
const distinct = (headers: FakeRequest['headers'] = {}) =>
  Object.fromEntries(
    Object.entries(headers)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [name, [value].flat()]),
  );

function setup(env: Record<string, string>, authenticate = jest.fn()) {
  const guard = new PrincipalGuard(loadConfig(env), new Reflector(), {
    authenticate,
  } as unknown as JwtVerifier);
  const reply = { header: jest.fn() };
  const run = async (
    partial: FakeRequest,
    handler: { new (): object; prototype: object } = ThreadsLike,
    method = 'list',
  ) => {
    const base = { method: 'GET', headers: {}, socket: { remoteAddress: '127.0.0.1' }, ...partial };
    const req = { raw: { headersDistinct: distinct(base.headers) }, ...base };
    const context = {
      getHandler: () => (handler.prototype as Record<string, unknown>)[method],
      getClass: () => handler,
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => reply }),
    } as unknown as ExecutionContext;
    expect(await guard.canActivate(context)).toBe(true);
    return req.principal;
  };
  return { run, reply, authenticate };
}

const domainError = async (pending: Promise<unknown>) => {
  const err: unknown = await pending.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  const { code, message, details } = err as DomainError;
  return { code, message, details };
};

describe('PrincipalGuard', () => {
  afterEach(() => jest.restoreAllMocks());

  describe('AUTH_MODE=none', () => {
    const { run } = setup({});

    it('is anonymous when the client names nobody, and then finds items by id whoever owns them', async () => {
      expect(await run({})).toEqual({ resourceId: 'anonymous', admin: false, anyOwnerById: true });
    });

    it('takes forwardedProps.resourceId, then forwardedProps.memory.resource, then ?resourceId=, then X-Resource-Id', async () => {
      const all = {
        body: { forwardedProps: { resourceId: 'a', memory: { thread: 't', resource: 'a' } } },
        query: { resourceId: 'b' },
        headers: { 'x-resource-id': 'c' },
      };
      expect(await run(all)).toEqual({ resourceId: 'a', admin: false });
      expect(await run({ ...all, body: { forwardedProps: { memory: { resource: 'm' } } } })).toEqual({
        resourceId: 'm',
        admin: false,
      });
      expect(await run({ ...all, body: {} })).toEqual({ resourceId: 'b', admin: false });
      expect(await run({ headers: { 'x-resource-id': 'c' } })).toEqual({ resourceId: 'c', admin: false });
    });

    it("takes a body's resourceId (POST /threads as Mastra's client sends it) before the query", async () => {
      expect(
        await run({ method: 'POST', body: { resourceId: 'owner-x' }, query: { resourceId: 'q' } }),
      ).toEqual({
        resourceId: 'owner-x',
        admin: false,
      });
      await expect(domainError(run({ method: 'POST', body: { resourceId: '' } }))).resolves.toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'body.resourceId' }],
      });
    });

    it('takes a Unicode owner from the body and the query, and percent-decoded from X-Resource-Id', async () => {
      const owner = 'josé.martín@corp.example';
      expect(await run({ body: { forwardedProps: { resourceId: owner } } })).toMatchObject({
        resourceId: owner,
      });
      expect(await run({ query: { resourceId: owner } })).toMatchObject({ resourceId: owner });
      const encoded = encodeURIComponent(owner);
      expect(await run({ headers: { 'x-resource-id': encoded } })).toMatchObject({ resourceId: owner });
      expect(await run({ headers: { 'x-resource-id': '100%25 sure' } })).toMatchObject({
        resourceId: '100% sure',
      });
    });

    it('takes a raw UTF-8 X-Resource-Id as a proxy forwards it (Node reads its bytes as latin1)', async () => {
      const owner = 'josé.martín@corp.example';
      const raw = Buffer.from(owner, 'utf8').toString('latin1');
      expect(await run({ headers: { 'x-resource-id': raw } })).toMatchObject({ resourceId: owner });
    });

    it.each([null, 'text', { memory: 'text' }, { memory: null }, { memory: {} }])(
      'names nobody with forwardedProps %j',
      async (forwardedProps) => {
        expect(await run({ method: 'POST', body: { forwardedProps } })).toEqual({
          resourceId: 'anonymous',
          admin: false,
          anyOwnerById: true,
        });
      },
    );

    it('refuses forwardedProps naming two different owners with VALIDATION_FAILED', async () => {
      const body = { forwardedProps: { resourceId: 'a', memory: { resource: 'b' } } };
      await expect(domainError(run({ method: 'POST', body }))).resolves.toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.memory.resource' }],
      });
    });

    it.each([
      [{ query: { resourceId: ['a', 'b'] } }, 'resourceId'],
      [{ query: { resourceId: 'a\u0001b' } }, 'resourceId'],
      [{ headers: { 'x-resource-id': 'a\tb' } }, 'x-resource-id'],
      [{ headers: { 'x-resource-id': 'a%0Ab' } }, 'x-resource-id'],
      [{ headers: { 'x-resource-id': '100%' } }, 'x-resource-id'],
      // An owner never holds a percent-escape: `%2561lice` decodes to `%61lice`, which is refused.
      [{ headers: { 'x-resource-id': '%2561lice' } }, 'x-resource-id'],
      [{ headers: { 'x-resource-id': ['alice', 'alice'] } }, 'x-resource-id'],
      [{ query: { resourceId: '%61lice' } }, 'resourceId'],
      [{ body: { forwardedProps: { resourceId: 'jos%C3%A9' } } }, 'forwardedProps.resourceId'],
      // Header bytes arrive as latin1: a lone 0xE9 (`é` in latin1) is not UTF-8.
      [{ headers: { 'x-resource-id': 'jos\u00e9' } }, 'x-resource-id'],
      [{ body: { forwardedProps: { resourceId: 7 } } }, 'forwardedProps.resourceId'],
      [{ body: { forwardedProps: { resourceId: 'x'.repeat(201) } } }, 'forwardedProps.resourceId'],
      [{ body: { forwardedProps: { memory: { resource: '' } } } }, 'forwardedProps.memory.resource'],
    ])('refuses an invalid resourceId (%j) with VALIDATION_FAILED', async (req, path) => {
      const { run: guarded } = setup({});
      await expect(domainError(guarded(req))).resolves.toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path }],
      });
    });
  });

  describe('@Public()', () => {
    it.each([
      ['a class', HealthLike, 'check'],
      ['a handler', MetricsLike, 'metrics'],
    ])('on %s skips authentication and resolves no principal', async (_, handler, method) => {
      const { run, authenticate } = setup({
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: 'https://idp.example.com',
        OIDC_AUDIENCE: 'io-bridge',
      });
      expect(await run({ headers: {} }, handler, method)).toBeUndefined();
      expect(authenticate).not.toHaveBeenCalled();
    });
  });

  describe('AUTH_MODE=jwt', () => {
    const env = { AUTH_MODE: 'jwt', OIDC_ISSUER: 'https://idp.example.com', OIDC_AUDIENCE: 'io-bridge' };

    it('passes the bearer token to the verifier and keeps the principal it proves', async () => {
      const { run, authenticate } = setup(
        env,
        jest.fn().mockResolvedValue({ resourceId: 'u1', admin: true }),
      );
      expect(await run({ headers: { authorization: 'bearer  abc.def.ghi' } })).toEqual({
        resourceId: 'u1',
        admin: true,
      });
      expect(authenticate).toHaveBeenCalledWith('abc.def.ghi');
    });

    it.each([undefined, '', 'Bearer', 'Bearer ', 'Basic dTpw', 'Bearer a b', ['Bearer x', 'Bearer y']])(
      'Authorization %j is 401 Authentication required, with a Bearer challenge',
      async (authorization) => {
        const { run, reply, authenticate } = setup(env);
        await expect(domainError(run({ headers: { authorization } }))).resolves.toEqual({
          code: 'UNAUTHENTICATED',
          message: 'Authentication required',
          details: undefined,
        });
        expect(reply.header).toHaveBeenCalledWith('www-authenticate', 'Bearer realm="io-bridge"');
        expect(authenticate).not.toHaveBeenCalled();
      },
    );

    it('two Authorization headers are 401 Authentication required (Node would keep the first)', async () => {
      const { run, authenticate } = setup(
        env,
        jest.fn().mockResolvedValue({ resourceId: 'u1', admin: false }),
      );
      const req = {
        headers: { authorization: 'Bearer first' },
        raw: { headersDistinct: { authorization: ['Bearer first', 'Bearer second'] } },
      };
      await expect(domainError(run(req))).resolves.toEqual({
        code: 'UNAUTHENTICATED',
        message: 'Authentication required',
        details: undefined,
      });
      expect(authenticate).not.toHaveBeenCalled();
    });

    it('a rejected token is 401 Invalid token; the reason goes to the log at warn, the token does not', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { run, reply } = setup(
        env,
        jest.fn().mockRejectedValue(new TokenRejected('ERR_JWT_EXPIRED: "exp" claim')),
      );
      await expect(
        domainError(run({ headers: { authorization: 'Bearer secret.token.value' } })),
      ).resolves.toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid token', details: undefined });
      expect(reply.header).toHaveBeenCalledWith(
        'www-authenticate',
        'Bearer realm="io-bridge", error="invalid_token"',
      );
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toContain('ERR_JWT_EXPIRED');
      expect(warn.mock.calls[0][0]).not.toContain('secret.token.value');
    });

    it('lets other failures (an unreachable identity provider) through as they are', async () => {
      const down = new DomainError('SERVICE_UNAVAILABLE', 'Authentication is unavailable');
      const { run } = setup(env, jest.fn().mockRejectedValue(down));
      await expect(run({ headers: { authorization: 'Bearer x' } })).rejects.toBe(down);
    });

    it('applies the ownership rule to the verified caller', async () => {
      const { run } = setup(env, jest.fn().mockResolvedValue({ resourceId: 'u1', admin: false }));
      await expect(
        domainError(run({ headers: { authorization: 'Bearer x', 'x-resource-id': 'u2' } })),
      ).resolves.toMatchObject({ code: 'FORBIDDEN', details: [{ path: 'x-resource-id' }] });
    });

    it("applies it to a body's resourceId (POST /threads): the caller's own passes, another is 403", async () => {
      const { run } = setup(env, jest.fn().mockResolvedValue({ resourceId: 'u1', admin: false }));
      const post = (resourceId: string) =>
        run({ method: 'POST', headers: { authorization: 'Bearer x' }, body: { resourceId, title: 't' } });
      expect(await post('u1')).toEqual({ resourceId: 'u1', admin: false });
      await expect(domainError(post('u2'))).resolves.toMatchObject({
        code: 'FORBIDDEN',
        details: [{ path: 'body.resourceId' }],
      });
    });

    it("applies it to forwardedProps.memory.resource: the caller's own passes, another is 403", async () => {
      const { run } = setup(env, jest.fn().mockResolvedValue({ resourceId: 'u1', admin: false }));
      const post = (memory: unknown, resourceId?: string) =>
        run({
          method: 'POST',
          headers: { authorization: 'Bearer x' },
          body: { forwardedProps: { resourceId, memory } },
        });
      expect(await post({ thread: 't', resource: 'u1' })).toEqual({ resourceId: 'u1', admin: false });
      expect(await post({ thread: 't', resource: 'u1' }, 'u1')).toEqual({ resourceId: 'u1', admin: false });
      await expect(domainError(post({ resource: 'u2' }))).resolves.toMatchObject({
        code: 'FORBIDDEN',
        details: [{ path: 'forwardedProps.memory.resource' }],
      });
      await expect(domainError(post({ resource: 'u2' }, 'u1'))).resolves.toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.memory.resource' }],
      });
    });
  });

  describe('AUTH_MODE=header', () => {
    const env = {
      AUTH_MODE: 'header',
      TRUSTED_PROXIES: '10.0.0.0/8,fd00::/8',
      AUTH_HEADER: 'X-Auth-Request-User',
    };

    it.each(['10.1.2.3', '::ffff:10.1.2.3', 'fd00::5'])(
      'trusts the header from %s',
      async (remoteAddress) => {
        const { run } = setup(env);
        expect(await run({ headers: { 'x-auth-request-user': 'carol' }, socket: { remoteAddress } })).toEqual(
          {
            resourceId: 'carol',
            admin: false,
          },
        );
      },
    );

    it.each([
      ['127.0.0.1', { 'x-auth-request-user': 'carol' }],
      ['11.0.0.1', { 'x-auth-request-user': 'carol', 'x-forwarded-for': '10.1.2.3' }],
      [undefined, { 'x-auth-request-user': 'carol' }],
      ['10.1.2.3', {}],
      ['10.1.2.3', { 'x-auth-request-user': '' }],
      ['10.1.2.3', { 'x-auth-request-user': ['carol', 'dave'] }],
      ['10.1.2.3', { 'x-auth-request-user': 'has\ttab' }],
      ['10.1.2.3', { 'x-auth-request-user': 'jos\u00e9' }],
      ['10.1.2.3', { 'x-auth-request-user': '%61lice' }],
    ])('from %s with %j is 401 Authentication required', async (remoteAddress, headers) => {
      jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { run } = setup(env);
      await expect(domainError(run({ headers, socket: { remoteAddress } }))).resolves.toEqual({
        code: 'UNAUTHENTICATED',
        message: 'Authentication required',
        details: undefined,
      });
    });

    describe('one owner, one spelling (docs/identity-headers.md)', () => {
      const socket = { remoteAddress: '10.0.0.1' };
      const rawUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
      const refused = async (decoding: 'true' | 'false', value: string) => {
        const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
        const { run } = setup({ ...env, AUTH_HEADER_PERCENT_DECODING: decoding });
        await expect(
          domainError(run({ headers: { 'x-auth-request-user': value }, socket })),
        ).resolves.toEqual({
          code: 'UNAUTHENTICATED',
          message: 'Authentication required',
          details: undefined,
        });
        expect(warn).toHaveBeenCalledWith(expect.stringContaining('not a valid resourceId'));
      };

      it.each([
        ['alice', 'alice'],
        [rawUtf8('josé.martín@corp.example'), 'josé.martín@corp.example'],
        // A `%` that escapes nothing is a character like any other.
        ['100%', '100%'],
        ['50% off', '50% off'],
      ])('by default takes the header as sent: %j is %j', async (value, owner) => {
        const { run } = setup(env);
        expect(await run({ headers: { 'x-auth-request-user': value }, socket })).toEqual({
          resourceId: owner,
          admin: false,
        });
      });

      it.each(['%61lice', 'jos%C3%A9', '100%25', 'al%69ce', '%2561lice'])(
        'by default refuses %j, which percent-decoding would make another name (401)',
        (value) => refused('false', value),
      );

      it.each([
        ['alice', 'alice'],
        ['jos%C3%A9.mart%C3%ADn%40corp.example', 'josé.martín@corp.example'],
        ['100%25', '100%'],
      ])(
        'with AUTH_HEADER_PERCENT_DECODING=true percent-decodes the header: %j is %j',
        async (value, owner) => {
          const { run } = setup({ ...env, AUTH_HEADER_PERCENT_DECODING: 'true' });
          expect(await run({ headers: { 'x-auth-request-user': value }, socket })).toEqual({
            resourceId: owner,
            admin: false,
          });
        },
      );

      it.each([
        // Decodes to `%61lice`: an owner never holds a percent-escape, in any mode.
        '%2561lice',
        // Percent-encoding is what the proxy promised: a raw byte beyond ASCII is not that.
        rawUtf8('josé'),
        'broken%',
        '%FF',
      ])('with AUTH_HEADER_PERCENT_DECODING=true refuses %j (401)', (value) => refused('true', value));

      it('reads X-Resource-Id (a client header) as raw or percent-encoded UTF-8 either way: the same owner', async () => {
        for (const [decoding, identity] of [
          ['false', rawUtf8('josé')],
          ['true', 'jos%C3%A9'],
        ]) {
          const { run } = setup({ ...env, AUTH_HEADER_PERCENT_DECODING: decoding });
          for (const resource of ['jos%C3%A9', rawUtf8('josé')]) {
            const headers = { 'x-auth-request-user': identity, 'x-resource-id': resource };
            expect(await run({ headers, socket })).toEqual({ resourceId: 'josé', admin: false });
          }
        }
      });
    });

    it('refuses an identity header sent twice (401), as Node presents it: joined, `bob, alice`', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { run } = setup(env);
      for (const [joined, values] of [
        ['bob, alice', ['bob', 'alice']],
        ['alice, alice', ['alice', 'alice']],
      ] as const) {
        const req = {
          headers: { 'x-auth-request-user': joined },
          raw: { headersDistinct: { 'x-auth-request-user': [...values] } },
          socket: { remoteAddress: '10.0.0.1' },
        };
        await expect(domainError(run(req))).resolves.toEqual({
          code: 'UNAUTHENTICATED',
          message: 'Authentication required',
          details: undefined,
        });
      }
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('was sent more than once'));
    });

    it('refuses X-Resource-Id sent twice with VALIDATION_FAILED', async () => {
      const { run } = setup(env);
      const req = {
        headers: { 'x-auth-request-user': 'carol', 'x-resource-id': ['carol', 'carol'] },
        socket: { remoteAddress: '10.0.0.1' },
      };
      await expect(domainError(run(req))).resolves.toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'x-resource-id', message: 'must be sent once' }],
      });
    });

    it('applies the ownership rule to the proxied caller', async () => {
      const { run } = setup(env);
      const req = {
        method: 'POST',
        headers: { 'x-auth-request-user': 'carol' },
        body: { forwardedProps: { resourceId: 'dave' } },
        socket: { remoteAddress: '10.0.0.1' },
      };
      await expect(domainError(run(req))).resolves.toMatchObject({
        code: 'FORBIDDEN',
        details: [{ path: 'forwardedProps.resourceId' }],
      });
    });
  });
});

describe('scopeToCaller', () => {
  const user: Principal = { resourceId: 'alice', admin: false };
  const admin: Principal = { resourceId: 'root', admin: true };
  const named = (body?: unknown, query?: unknown, header?: unknown): Array<[string, unknown]> => [
    ['forwardedProps.resourceId', body],
    ['resourceId', query],
    ['x-resource-id', header],
  ];

  it.each([
    ['nothing named', named()],
    ['its own resource everywhere', named('alice', 'alice', 'alice')],
    ['its own resource once', named(undefined, 'alice')],
  ])('keeps the caller when the client names %s', (_, requested) => {
    expect(scopeToCaller(user, requested, false)).toBe(user);
    expect(scopeToCaller(user, requested, true)).toBe(user);
  });

  it.each([
    ['forwardedProps.resourceId', named('bob')],
    ['resourceId', named(undefined, 'bob')],
    ['x-resource-id', named(undefined, undefined, 'bob')],
    ['resourceId', named('alice', ['alice'])],
    ['x-resource-id', named('alice', 'alice', 'Alice')],
  ])('is 403 FORBIDDEN when %s names another resource, read or write', (path, requested) => {
    for (const read of [true, false]) {
      expect(() => scopeToCaller(user, requested, read)).toThrow(
        expect.objectContaining({ code: 'FORBIDDEN', details: [expect.objectContaining({ path })] }),
      );
    }
  });

  it('lets an admin read another owner (readAs), by query or header', () => {
    expect(scopeToCaller(admin, named(undefined, 'alice'), true)).toEqual({ ...admin, readAs: 'alice' });
    expect(scopeToCaller(admin, named(undefined, undefined, 'alice'), true)).toEqual({
      ...admin,
      readAs: 'alice',
    });
    expect(scopeToCaller(admin, named(undefined, 'alice', 'alice'), true)).toEqual({
      ...admin,
      readAs: 'alice',
    });
  });

  it('never lets an admin write as another owner', () => {
    for (const requested of [
      named('alice'),
      named(undefined, 'alice'),
      named(undefined, undefined, 'alice'),
    ]) {
      expect(() => scopeToCaller(admin, requested, false)).toThrow(
        expect.objectContaining({ code: 'FORBIDDEN' }),
      );
    }
  });

  it('is 403 for an admin read naming two different owners, 400 for an invalid one', () => {
    expect(() => scopeToCaller(admin, named(undefined, 'alice', 'bob'), true)).toThrow(
      expect.objectContaining({ code: 'FORBIDDEN' }),
    );
    expect(() => scopeToCaller(admin, named(undefined, 'has\u0001control'), true)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED' }),
    );
  });
});

describe('isResourceId', () => {
  it.each(['alice', 'josé.martín@corp.example', '100%', '50% off', '%zz', 'a%2'])('takes %j', (value) => {
    expect(isResourceId(value)).toBe(true);
  });

  it.each(['%61lice', 'jos%C3%A9', '100%25', '%2f', '', 'a\u0001b', 7, undefined])('refuses %j', (value) => {
    expect(isResourceId(value)).toBe(false);
  });
});

describe('idScope', () => {
  it("is the caller's own resource for a user, read or write", () => {
    const user: Principal = { resourceId: 'alice', admin: false };
    expect(idScope(user, 'read')).toBe('alice');
    expect(idScope(user, 'write')).toBe('alice');
  });

  it("is any owner for an admin's read only", () => {
    const admin: Principal = { resourceId: 'root', admin: true, readAs: 'alice' };
    expect(idScope(admin, 'read')).toBe(ANY_OWNER);
    expect(idScope(admin, 'write')).toBe('root');
  });

  it('is any owner, read or write, when AUTH_MODE=none named no owner', () => {
    const unnamed: Principal = { resourceId: 'anonymous', admin: false, anyOwnerById: true };
    expect(idScope(unnamed, 'read')).toBe(ANY_OWNER);
    expect(idScope(unnamed, 'write')).toBe(ANY_OWNER);
  });
});
