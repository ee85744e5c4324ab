import { createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import { SignJWT } from 'jose';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/config';
import { RunsRepository } from '../../src/runs/storage/runs.repository';
import { ThreadsRepository } from '../../src/threads/threads.repository';
import { db, eventually, startApp, TestApp } from '../support/app';
import { failedWith, LEVEL, serviceLogs } from '../support/log-sink';
import { TestIdp } from '../support/oidc';
import { memoryOf, openRun, postRun, runInput, types, uid } from '../support/sse';

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A request to the app under /io-bridge with the given headers (JSON content type when there is a body). */
function caller(t: () => TestApp) {
  return (path: string, headers: Record<string, string> = {}, init: RequestInit = {}) =>
    fetch(`${t().baseUrl}/io-bridge${path}`, {
      ...init,
      headers: { ...(init.body ? { 'content-type': 'application/json' } : {}), ...headers },
    });
}

/**
 * A request over node:http, byte for byte: a header given as an array is sent once per value (as two
 * proxies, or a proxy and a client, would), and a string goes out as latin1, so raw UTF-8 can be sent.
 */
function rawRequest(
  url: string,
  headers: Record<string, string | string[]>,
  method: 'GET' | 'POST' = 'GET',
): Promise<{ status: number; body: Record<string, unknown> }> {
  const json = method === 'POST' ? { 'content-type': 'application/json' } : {};
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...json, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
        }),
      );
    });
    req.on('error', reject);
    // A Buffer: a string body would go out with the headers in its encoding (UTF-8), not as latin1.
    req.end(method === 'POST' ? Buffer.from('{}') : undefined);
  });
}

/** `text` as its UTF-8 bytes in a header value (node:http writes a string's characters as latin1 bytes). */
const rawUtf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

/** `alice-…` as `%61lice-…`: the spelling percent-decoding would turn into `alice-…`. */
const percentSpelling = (owner: string) => `%${owner.charCodeAt(0).toString(16)}${owner.slice(1)}`;

const UNAUTHENTICATED = { statusCode: 401, code: 'UNAUTHENTICATED', message: 'Authentication required' };

const runRecorded = (runId: string) =>
  db(async (c) => (await c.query('SELECT 1 FROM runs WHERE id = $1', [runId])).rowCount);

describe('authentication', () => {
  describe('AUTH_MODE=jwt', () => {
    let idp: TestIdp;
    let t: TestApp;
    const api = caller(() => t);
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const alice = uid('alice');
    const bob = uid('bob');
    const operator = uid('operator');
    let esKid: string;

    beforeAll(async () => {
      idp = await TestIdp.start();
      esKid = await idp.addKey('ES256');
      t = await startApp({
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: idp.issuer,
        OIDC_AUDIENCE: idp.audience,
        ADMIN_ROLE_CLAIM: 'realm_access.roles',
        ADMIN_ROLE: 'io-admin',
      });
    });
    afterAll(async () => {
      await t.close();
      await idp.close();
    });
    afterEach(() => jest.restoreAllMocks());

    const tokenOf = (sub: string, roles: string[] = []) =>
      idp.sign({ sub, realm_access: { roles } }).then(bearer);

    it('accepts a valid token: the owner is its sub, RS256 or ES256', async () => {
      const created = await api('/threads', await tokenOf(alice), { method: 'POST', body: '{}' });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ resourceId: alice });
      const es = bearer(await idp.sign({ sub: alice }, { kid: esKid }));
      const listed = await api('/threads', es);
      expect(listed.status).toBe(200);
      const { threads } = (await listed.json()) as { threads: Array<{ resourceId: string }> };
      expect(threads.length).toBeGreaterThan(0);
      expect(threads.every((th) => th.resourceId === alice)).toBe(true);
    });

    it('accepts a token expired or not yet valid by less than the clock tolerance (5 s)', async () => {
      const late = await idp.sign({ sub: alice }, { expiresIn: -2 });
      const early = await idp.sign({ sub: alice }, { notBefore: 2 });
      expect((await api('/threads', bearer(late))).status).toBe(200);
      expect((await api('/threads', bearer(early))).status).toBe(200);
    });

    it('answers 401 Authentication required without a bearer token', async () => {
      const attempts: Array<Record<string, string>> = [
        {},
        { authorization: 'Basic YWxpY2U6eA==' },
        { authorization: 'Bearer' },
      ];
      for (const headers of attempts) {
        const res = await api('/threads', headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="io-bridge"');
        expect(await res.json()).toEqual({
          statusCode: 401,
          code: 'UNAUTHENTICATED',
          message: 'Authentication required',
        });
      }
    });

    const forged: Array<[string, () => string | Promise<string>]> = [
      ['wrong issuer', () => idp.sign({ sub: alice }, { issuer: 'https://evil.example.com' })],
      ['wrong audience', () => idp.sign({ sub: alice }, { audience: 'another-api' })],
      ['expired', () => idp.sign({ sub: alice }, { expiresIn: -60 })],
      ['not valid before a future nbf', () => idp.sign({ sub: alice }, { notBefore: 60 })],
      ['without exp', () => idp.sign({ sub: alice }, { expiresIn: null })],
      ['without the resourceId claim', () => idp.sign({ name: 'Alice' })],
      [
        'alg none',
        () => {
          const now = Math.floor(Date.now() / 1000);
          const claims = { sub: alice, iss: idp.issuer, aud: idp.audience, iat: now, exp: now + 300 };
          return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
        },
      ],
      [
        'HS256 signed with the public key as secret',
        async () =>
          new SignJWT({ sub: alice })
            .setProtectedHeader({ alg: 'HS256', kid: idp.firstKid })
            .setIssuer(idp.issuer)
            .setAudience(idp.audience)
            .setIssuedAt()
            .setExpirationTime('5m')
            .sign(new TextEncoder().encode(await idp.publicPem())),
      ],
      [
        'signed by a key whose kid the JWKS does not have',
        async () => idp.sign({ sub: alice }, { kid: await idp.addKey('RS256', false) }),
      ],
      [
        'tampered payload',
        async () => {
          const [header, payload, signature] = (await idp.sign({ sub: bob })).split('.');
          const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
          return [header, b64({ ...claims, sub: alice }), signature].join('.');
        },
      ],
      ['not a JWT', () => 'not.a.jwt'],
    ];

    it.each(forged)('answers 401 Invalid token for a token %s, saying nothing more', async (_, make) => {
      const token = await make();
      const res = await api('/threads', bearer(token));
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="io-bridge", error="invalid_token"');
      expect(await res.json()).toEqual({
        statusCode: 401,
        code: 'UNAUTHENTICATED',
        message: 'Invalid token',
      });
    });

    it('refuses a run with a bad token before any stream', async () => {
      const input = runInput('hi');
      const res = await postRun(t.runUrl, input, {
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...bearer(await idp.sign({ sub: alice }, { expiresIn: -60 })),
        },
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await runRecorded(input.runId)).toBe(0);
    });

    it('logs why a token was refused at warn, without the token', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const token = await idp.sign({ sub: alice }, { audience: 'another-api' });
      expect((await api('/threads', bearer(token))).status).toBe(401);
      const logged = warn.mock.calls.map((c) => String(c[0]));
      expect(logged.some((l) => l.includes('ERR_JWT_CLAIM_VALIDATION_FAILED') && l.includes('"aud"'))).toBe(
        true,
      );
      expect(logged.some((l) => l.includes(token) || l.includes(token.split('.')[1]))).toBe(false);
    });

    it('fetches the discovery document once and keeps the keys cached', async () => {
      const token = await tokenOf(alice);
      await api('/threads', token);
      const jwksFetches = idp.fetches.jwks;
      for (let i = 0; i < 5; i++) expect((await api('/threads', token)).status).toBe(200);
      expect(idp.fetches.jwks).toBe(jwksFetches);
      expect(idp.fetches.discovery).toBe(1);
    });

    it('picks up a new kid on the JWKS without a restart (key rotation)', async () => {
      await api('/threads', await tokenOf(alice));
      const kid = await idp.addKey('RS256');
      const rotated = bearer(await idp.sign({ sub: alice }, { kid }));
      const before = idp.fetches.jwks;
      // jose refetches the JWKS for an unknown kid at most once per 30 s cooldown: step past it.
      const realNow = Date.now.bind(Date);
      jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 31_000);
      const res = await api('/threads', rotated);
      expect(res.status).toBe(200);
      expect(idp.fetches.jwks).toBe(before + 1);
      expect(idp.fetches.discovery).toBe(1);
    });

    it('keeps Swagger UI and its document open without a token', async () => {
      const ui = await fetch(`${t.baseUrl}/docs`);
      expect(ui.status).toBe(200);
      expect(ui.headers.get('content-type')).toMatch(/text\/html/);
      const doc = await fetch(`${t.baseUrl}/docs-json`);
      expect(doc.status).toBe(200);
      expect((await doc.json()).components.securitySchemes.bearer).toMatchObject({
        type: 'http',
        scheme: 'bearer',
      });
    });

    describe('one owner, one spelling', () => {
      it('refuses a claim with a percent-escape (401 Invalid token), never a second spelling of an owner', async () => {
        const created = await api('/threads', await tokenOf(alice), { method: 'POST', body: '{}' });
        expect(created.status).toBe(201);
        for (const sub of [percentSpelling(alice), `jos%C3%A9-${alice}`]) {
          const res = await api('/threads?limit=100', await tokenOf(sub));
          expect({ sub, status: res.status, body: await res.json() }).toEqual({
            sub,
            status: 401,
            body: { statusCode: 401, code: 'UNAUTHENTICATED', message: 'Invalid token' },
          });
        }
        // A `%` that escapes nothing is a character like any other, and Unicode owners work as they are.
        for (const sub of [`100%-${alice}`, `josé-${alice}`]) {
          const own = await api('/threads', await tokenOf(sub), { method: 'POST', body: '{}' });
          expect(own.status).toBe(201);
          expect(await own.json()).toMatchObject({ resourceId: sub });
        }
      });

      it('answers 401 to two Authorization headers, even both valid (Node would keep the first)', async () => {
        const token = (await tokenOf(alice)).authorization;
        const url = `${t.baseUrl}/io-bridge/threads`;
        expect(await rawRequest(url, { authorization: token })).toMatchObject({ status: 200 });
        for (const twice of [
          [token, token],
          [token, (await tokenOf(bob)).authorization],
        ]) {
          expect(await rawRequest(url, { authorization: twice })).toEqual({
            status: 401,
            body: UNAUTHENTICATED,
          });
        }
      });
    });

    describe('ownership with two users and an admin', () => {
      it('another user gets 404 everywhere; naming another owner is 403; an admin reads but never writes', async () => {
        const asAlice = await tokenOf(alice);
        const asBob = await tokenOf(bob);
        const asAdmin = await tokenOf(operator, ['offline_access', 'io-admin']);
        const threadId = uid('owned');
        const live = await openRun(
          t.runUrl,
          {
            threadId,
            runId: uid('run'),
            messages: [{ id: 'u1', role: 'user', content: '/tool get_city {"city":"x"}' }],
            tools: [GET_CITY],
            context: [],
            forwardedProps: memoryOf(threadId),
          },
          asAlice,
        );
        const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
        const runId = (live.frames[0].event as { runId: string }).runId;
        const result = `/runs/${runId}/tool-calls/${end.toolCallId}/result`;
        const writes = (who: Record<string, string>): Array<[string, Promise<Response>]> => [
          ['PATCH thread', api(`/threads/${threadId}`, who, { method: 'PATCH', body: '{"title":"mine"}' })],
          ['DELETE thread', api(`/threads/${threadId}`, who, { method: 'DELETE' })],
          ['POST cancel', api(`/runs/${runId}/cancel`, who, { method: 'POST' })],
          ['POST result', api(result, who, { method: 'POST', body: '{"content":1}' })],
          [
            'POST run on the thread',
            postRun(
              t.runUrl,
              // Naming memory: a memory-less run would be stateless and never touch Alice's thread.
              { ...runInput('steal'), threadId, forwardedProps: memoryOf(threadId) },
              { headers: { 'content-type': 'application/json', ...who } },
            ),
          ],
        ];
        const expectAll = async (
          attempts: Array<[string, Promise<Response>]>,
          status: number,
          code: string,
        ) => {
          for (const [name, pending] of attempts) {
            const res = await pending;
            expect({ name, status: res.status, body: await res.json() }).toMatchObject({
              name,
              status,
              body: { code },
            });
          }
        };

        // Bob: another owner's thread and run do not exist for him.
        await expectAll(
          [
            ['GET thread', api(`/threads/${threadId}`, asBob)],
            ['GET messages', api(`/threads/${threadId}/messages`, asBob)],
            ['GET run', api(`/runs/${runId}`, asBob)],
            ['GET run events', api(`/runs/${runId}/events`, asBob)],
            ...writes(asBob),
          ],
          404,
          'NOT_FOUND',
        );
        const bobs = await (await api('/threads?limit=100', asBob)).json();
        expect(bobs.threads.map((th: { id: string }) => th.id)).not.toContain(threadId);

        // Naming Alice's resource does not widen what Bob sees, in any of the three places.
        const stolenRun = { ...runInput('steal'), threadId, forwardedProps: { resourceId: alice } };
        await expectAll(
          [
            ['query resourceId', api(`/threads?resourceId=${alice}`, asBob)],
            ['X-Resource-Id', api(`/threads/${threadId}`, { ...asBob, 'x-resource-id': alice })],
            [
              'forwardedProps.resourceId',
              postRun(t.runUrl, stolenRun, { headers: { 'content-type': 'application/json', ...asBob } }),
            ],
          ],
          403,
          'FORBIDDEN',
        );
        expect(await runRecorded(stolenRun.runId)).toBe(0);

        // The admin reads Alice's thread, messages and run, and lists her threads.
        const thread = await api(`/threads/${threadId}`, asAdmin);
        expect(thread.status).toBe(200);
        expect(await thread.json()).toMatchObject({ id: threadId, resourceId: alice });
        const messages = await api(`/threads/${threadId}/messages?format=agui`, asAdmin);
        expect(messages.status).toBe(200);
        expect((await messages.json()).messages[0]).toMatchObject({ id: 'u1', role: 'user' });
        // ...and can join the stream of her live run (leaving it stops nothing: her client still reads).
        const events = await api(`/runs/${runId}/events`, asAdmin);
        expect(events.status).toBe(200);
        const reader = events.body!.getReader();
        expect(new TextDecoder().decode((await reader.read()).value)).toMatch(
          /^id: 1\ndata: \{"type":"RUN_STARTED"/,
        );
        await reader.cancel();
        const run = await api(`/runs/${runId}`, asAdmin);
        expect(run.status).toBe(200);
        expect(await run.json()).toMatchObject({
          id: runId,
          status: 'waiting_for_tool',
          pendingToolCalls: [expect.objectContaining({ toolCallId: end.toolCallId })],
        });
        for (const list of [
          api(`/threads?limit=100&resourceId=${alice}`, asAdmin),
          api('/threads?limit=100', { ...asAdmin, 'x-resource-id': alice }),
        ]) {
          const page = await (await list).json();
          expect(page.threads.map((th: { id: string }) => th.id)).toContain(threadId);
          expect(page.threads.every((th: { resourceId: string }) => th.resourceId === alice)).toBe(true);
        }
        const own = await (await api('/threads?limit=100', asAdmin)).json();
        expect(own.threads.map((th: { id: string }) => th.id)).not.toContain(threadId);

        // The admin writes nothing of Alice's: 404 like any other owner, 403 when naming her.
        await expectAll(writes(asAdmin), 404, 'NOT_FOUND');
        const adminRun = { ...runInput('as alice'), threadId, forwardedProps: { resourceId: alice } };
        await expectAll(
          [
            [
              'PATCH naming her',
              api(`/threads/${threadId}?resourceId=${alice}`, asAdmin, {
                method: 'PATCH',
                body: '{"title":"x"}',
              }),
            ],
            [
              'cancel naming her',
              api(`/runs/${runId}/cancel`, { ...asAdmin, 'x-resource-id': alice }, { method: 'POST' }),
            ],
            [
              'run naming her',
              postRun(t.runUrl, adminRun, { headers: { 'content-type': 'application/json', ...asAdmin } }),
            ],
          ],
          403,
          'FORBIDDEN',
        );
        expect(await runRecorded(adminRun.runId)).toBe(0);

        // Alice, repeating her own resource everywhere, still owns and finishes her run.
        const answered = await api(
          `${result}?resourceId=${alice}`,
          { ...asAlice, 'x-resource-id': alice },
          {
            method: 'POST',
            body: '{"content":"ok"}',
          },
        );
        expect(answered.status).toBe(202);
        expect(types(await live.done).at(-1)).toBe('RUN_FINISHED');
        const after = await (await api(`/threads/${threadId}`, asAlice)).json();
        expect(after.title).toBe('/tool get_city {"city":"x"}');
        const ownRun = { ...runInput('mine'), forwardedProps: { resourceId: alice } };
        const res = await postRun(t.runUrl, ownRun, {
          headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...asAlice },
        });
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('RUN_FINISHED');
      });

      it('a token without the admin role reading another owner with ?resourceId= gets 403', async () => {
        const asBob = await tokenOf(bob, ['io-user']);
        const res = await api(`/threads?resourceId=${alice}`, asBob);
        expect(res.status).toBe(403);
      });
    });

    it("takes forwardedProps.memory.resource as a resourceId: the caller's own runs, another's is 403, two different is 400", async () => {
      const asAlice = await tokenOf(alice);
      const json = { 'content-type': 'application/json', accept: 'text/event-stream', ...asAlice };
      const mine = runInput('mine');
      const own = await postRun(
        t.runUrl,
        { ...mine, forwardedProps: { memory: { thread: mine.threadId, resource: alice } } },
        { headers: json },
      );
      expect(own.status).toBe(200);
      expect(await own.text()).toContain('RUN_FINISHED');
      expect(await (await api(`/threads/${mine.threadId}`, asAlice)).json()).toMatchObject({
        resourceId: alice,
      });

      const refused: Array<[string | undefined, number, string]> = [
        [undefined, 403, 'FORBIDDEN'],
        [alice, 400, 'VALIDATION_FAILED'],
      ];
      for (const [resourceId, status, code] of refused) {
        const input = runInput('not mine');
        const memory = { thread: input.threadId, resource: bob };
        const res = await postRun(
          t.runUrl,
          { ...input, forwardedProps: { resourceId, memory } },
          { headers: json },
        );
        expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({
          status,
          type: expect.stringMatching(/^application\/json/),
        });
        expect(await res.json()).toMatchObject({
          code,
          details: [{ path: 'forwardedProps.memory.resource' }],
        });
        expect(await runRecorded(input.runId)).toBe(0);
      }
    });

    it('answers 503 when the identity provider cannot be reached, and boots anyway', async () => {
      const error = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const withdraw = serviceLogs.expect(failedWith(503));
      const down = await startApp({
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: `http://127.0.0.1:${port}/realms/gone`,
        OIDC_AUDIENCE: idp.audience,
      });
      try {
        const res = await fetch(`${down.baseUrl}/io-bridge/threads`, { headers: await tokenOf(alice) });
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({
          statusCode: 503,
          code: 'SERVICE_UNAVAILABLE',
          message: 'Authentication is unavailable',
        });
        expect(error).toHaveBeenCalledWith(expect.stringContaining('OIDC discovery failed'));
        const refused = await serviceLogs.takeWhen(failedWith(503));
        expect(refused).toEqual([
          expect.objectContaining({
            level: LEVEL.error,
            req: { id: expect.any(String), method: 'GET', path: '/io-bridge/threads' },
          }),
        ]);
      } finally {
        withdraw();
        await down.close();
      }
    });

    it('uses OIDC_JWKS_URI without discovery when it is set', async () => {
      const discoveries = idp.fetches.discovery;
      const direct = await startApp({
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: idp.issuer,
        OIDC_AUDIENCE: idp.audience,
        OIDC_JWKS_URI: idp.jwksUri,
        RESOURCE_ID_CLAIM: 'preferred_username',
      });
      try {
        const token = await idp.sign({ sub: 'f81d4fae', preferred_username: alice });
        const res = await fetch(`${direct.baseUrl}/io-bridge/threads`, { headers: bearer(token) });
        expect(res.status).toBe(200);
        expect(idp.fetches.discovery).toBe(discoveries);
      } finally {
        await direct.close();
      }
    });
  });

  describe('AUTH_MODE=none', () => {
    let t: TestApp;
    const api = caller(() => t);
    const json = (headers: Record<string, string> = {}) => ({
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    });
    beforeAll(async () => {
      t = await startApp();
    });
    afterAll(() => t.close());

    it("finds a thread and a run by id alone when no owner is named; naming another owner is 404; lists stay anonymous's", async () => {
      const xavier = uid('xavier');
      const asXavier = { 'x-resource-id': xavier };
      const threadId = uid('by-id');
      expect(
        (await api('/threads', asXavier, { method: 'POST', body: JSON.stringify({ id: threadId }) })).status,
      ).toBe(201);
      const waitingRun = async () => {
        const input = runInput('/tool get_city {"city":"x"}', { threadId, tools: [GET_CITY] });
        const live = await openRun(t.runUrl, input, asXavier);
        const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
        return {
          live,
          runId: input.runId,
          result: `/runs/${input.runId}/tool-calls/${end.toolCallId}/result`,
        };
      };
      const first = await waitingRun();

      // Naming another owner, as header or query, still scopes every per-id route to that owner.
      const asYves = { 'x-resource-id': uid('yves') };
      for (const [name, pending] of [
        ['GET thread', api(`/threads/${threadId}`, asYves)],
        ['GET thread ?resourceId=', api(`/threads/${threadId}?resourceId=${uid('yves')}`)],
        ['GET messages', api(`/threads/${threadId}/messages`, asYves)],
        ['PATCH thread', api(`/threads/${threadId}`, asYves, { method: 'PATCH', body: '{"title":"y"}' })],
        ['DELETE thread', api(`/threads/${threadId}`, asYves, { method: 'DELETE' })],
        ['GET run', api(`/runs/${first.runId}`, asYves)],
        ['POST cancel', api(`/runs/${first.runId}/cancel`, asYves, { method: 'POST' })],
        ['POST result', api(first.result, asYves, { method: 'POST', body: '{"content":1}' })],
      ] as const) {
        const res = await pending;
        expect({ name, status: res.status, body: await res.json() }).toMatchObject({
          name,
          status: 404,
          body: { code: 'NOT_FOUND' },
        });
      }

      // Naming nobody: each per-id route finds Xavier's thread and run.
      const thread = await api(`/threads/${threadId}`);
      expect(thread.status).toBe(200);
      expect(await thread.json()).toMatchObject({ id: threadId, resourceId: xavier });
      const messages = await api(`/threads/${threadId}/messages?format=agui`);
      expect(messages.status).toBe(200);
      expect((await messages.json()).messages[0]).toMatchObject({ role: 'user' });
      const run = await api(`/runs/${first.runId}`);
      expect(run.status).toBe(200);
      expect(await run.json()).toMatchObject({ id: first.runId, status: 'waiting_for_tool' });
      expect((await api(first.result, {}, { method: 'POST', body: '{"content":"ok"}' })).status).toBe(202);
      expect(types(await first.live.done).at(-1)).toBe('RUN_FINISHED');

      const second = await waitingRun();
      expect((await api(`/runs/${second.runId}/cancel`, {}, { method: 'POST' })).status).toBe(202);
      const cancelled = await second.live.done;
      expect(cancelled.at(-1)?.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });

      const renamed = await api(`/threads/${threadId}`, {}, { method: 'PATCH', body: '{"title":"renamed"}' });
      expect(renamed.status).toBe(200);
      expect(await renamed.json()).toMatchObject({ title: 'renamed', resourceId: xavier });

      // Creating and listing still mean anonymous: the id is not free, the list is anonymous's only.
      expect(
        (await api('/threads', {}, { method: 'POST', body: JSON.stringify({ id: threadId }) })).status,
      ).toBe(409);
      const own = await (await api('/threads', {}, { method: 'POST', body: '{}' })).json();
      expect(own.resourceId).toBe('anonymous');
      const page = await (await api('/threads?limit=100')).json();
      expect(page.threads.map((th: { id: string }) => th.id)).toContain(own.id);
      expect(page.threads.every((th: { resourceId: string }) => th.resourceId === 'anonymous')).toBe(true);

      expect((await api(`/threads/${threadId}`, {}, { method: 'DELETE' })).status).toBe(204);
      expect((await api(`/threads/${threadId}`, asXavier)).status).toBe(404);
    });

    it('refuses an owner with a percent-escape wherever it is named, and X-Resource-Id sent twice (400)', async () => {
      const alice = uid('alice');
      const url = `${t.baseUrl}/io-bridge/threads`;
      const attempts: Array<[string, Promise<{ status: number; body: Record<string, unknown> }>]> = [
        ['?resourceId=', rawRequest(`${url}?resourceId=${encodeURIComponent(percentSpelling(alice))}`, {})],
        ['X-Resource-Id', rawRequest(url, { 'x-resource-id': encodeURIComponent(percentSpelling(alice)) })],
        ['X-Resource-Id twice', rawRequest(url, { 'x-resource-id': [alice, alice] })],
      ];
      for (const [name, pending] of attempts) {
        expect({ name, ...(await pending) }).toMatchObject({
          name,
          status: 400,
          body: { statusCode: 400, code: 'VALIDATION_FAILED', details: [{ path: expect.any(String) }] },
        });
      }
      const input = runInput('hi', { forwardedProps: { resourceId: percentSpelling(alice) } });
      const res = await postRun(t.runUrl, input, json());
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.resourceId' }],
      });
      expect(await runRecorded(input.runId)).toBe(0);
      // X-Resource-Id is read as percent-encoded UTF-8 (a browser sends only ASCII): `%61lice…` names alice.
      const created = await api('/threads', { 'x-resource-id': alice }, { method: 'POST', body: '{}' });
      const { id } = (await created.json()) as { id: string };
      const reads = [
        [alice, 200],
        [percentSpelling(alice), 200],
        // Decodes to `%61lice…`, which no owner can be.
        [percentSpelling(alice).replace('%', '%25'), 400],
      ] as const;
      for (const [spelled, status] of reads) {
        const read = await rawRequest(`${url}/${id}`, { 'x-resource-id': spelled });
        expect({ spelled, status: read.status }).toEqual({ spelled, status });
      }
    });

    it('takes forwardedProps.memory.resource as the owner of the run and its thread', async () => {
      const bob = uid('bob');
      const input = runInput('hello', {});
      const res = await postRun(
        t.runUrl,
        { ...input, forwardedProps: { memory: { thread: input.threadId, resource: bob } } },
        json(),
      );
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('RUN_FINISHED');
      const bobs = await (await api('/threads?limit=100', { 'x-resource-id': bob })).json();
      expect(bobs.threads).toEqual([expect.objectContaining({ id: input.threadId, resourceId: bob })]);
      const run = await db((c) => c.query('SELECT resource_id FROM runs WHERE id = $1', [input.runId]));
      expect(run.rows).toEqual([{ resource_id: bob }]);
    });

    it('refuses a run naming two different owners in resourceId and memory.resource with 400, before any stream', async () => {
      const input = runInput('which one');
      const res = await postRun(
        t.runUrl,
        {
          ...input,
          forwardedProps: { resourceId: 'alice', memory: { thread: input.threadId, resource: 'bob' } },
        },
        json(),
      );
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toMatchObject({
        statusCode: 400,
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.memory.resource' }],
      });
      expect(await runRecorded(input.runId)).toBe(0);
      const same = runInput('the same one');
      const agreed = await postRun(
        t.runUrl,
        {
          ...same,
          forwardedProps: { resourceId: 'carla', memory: { thread: same.threadId, resource: 'carla' } },
        },
        json(),
      );
      expect(agreed.status).toBe(200);
      expect(await agreed.text()).toContain('RUN_FINISHED');
    });
  });

  describe('AUTH_MODE=header', () => {
    const carol = uid('carol');
    const proxied = (extra: Record<string, string> = {}) => ({ 'x-auth-request-user': carol, ...extra });

    describe('from a trusted proxy address', () => {
      let t: TestApp;
      const api = caller(() => t);
      beforeAll(async () => {
        t = await startApp({ AUTH_MODE: 'header', TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.0/8' });
      });
      afterAll(() => t.close());

      it('takes the owner from the header', async () => {
        const created = await api('/threads', proxied(), { method: 'POST', body: '{}' });
        expect(created.status).toBe(201);
        expect(await created.json()).toMatchObject({ resourceId: carol });
        const page = await (await api('/threads', proxied())).json();
        expect(page.threads.length).toBeGreaterThan(0);
        expect(page.threads.every((th: { resourceId: string }) => th.resourceId === carol)).toBe(true);
      });

      it('answers 401 when the header is missing or empty', async () => {
        const attempts: Array<Record<string, string>> = [
          {},
          { 'x-auth-request-user': '' },
          { 'x-resource-id': carol },
        ];
        for (const headers of attempts) {
          const res = await api('/threads', headers);
          expect(res.status).toBe(401);
          expect(await res.json()).toEqual({
            statusCode: 401,
            code: 'UNAUTHENTICATED',
            message: 'Authentication required',
          });
        }
      });

      it('takes the header as sent: raw UTF-8 is a Unicode owner, a percent-escape is a 401, not another spelling', async () => {
        const url = `${t.baseUrl}/io-bridge/threads`;
        const alice = uid('alice');
        const josé = uid('josé');
        const created = await api(
          '/threads',
          { 'x-auth-request-user': alice },
          { method: 'POST', body: '{}' },
        );
        expect(created.status).toBe(201);
        for (const spelled of [percentSpelling(alice), encodeURIComponent(josé), `${alice}%25`]) {
          expect({ spelled, ...(await rawRequest(url, { 'x-auth-request-user': spelled })) }).toEqual({
            spelled,
            status: 401,
            body: UNAUTHENTICATED,
          });
        }
        const own = await rawRequest(url, { 'x-auth-request-user': rawUtf8(josé) }, 'POST');
        expect(own).toMatchObject({ status: 201, body: { resourceId: josé } });
        // X-Resource-Id, a client's header, may repeat the caller raw or percent-encoded.
        for (const named of [rawUtf8(josé), encodeURIComponent(josé)]) {
          const read = await rawRequest(`${url}/${String(own.body.id)}`, {
            'x-auth-request-user': rawUtf8(josé),
            'x-resource-id': named,
          });
          expect(read).toMatchObject({ status: 200, body: { resourceId: josé } });
        }
        // `100%` escapes nothing: an owner of its own, as it would be in a token.
        const percent = await rawRequest(url, { 'x-auth-request-user': `100%-${alice}` }, 'POST');
        expect(percent).toMatchObject({ status: 201, body: { resourceId: `100%-${alice}` } });
      });

      it('answers 401 to two identity headers, which Node would join into one owner (`bob, alice`)', async () => {
        const url = `${t.baseUrl}/io-bridge/threads`;
        const bob = uid('bob');
        expect(await rawRequest(url, { 'x-auth-request-user': carol })).toMatchObject({ status: 200 });
        for (const twice of [
          [bob, carol],
          [carol, carol],
        ]) {
          expect(await rawRequest(url, { 'x-auth-request-user': twice })).toEqual({
            status: 401,
            body: UNAUTHENTICATED,
          });
        }
        // Joined by hand, the same text is a name like any other: only the header sent twice is refused.
        const joined = await rawRequest(url, { 'x-auth-request-user': `${bob}, ${carol}` }, 'POST');
        expect(joined).toMatchObject({ status: 201, body: { resourceId: `${bob}, ${carol}` } });
        expect(
          await rawRequest(url, { 'x-auth-request-user': carol, 'x-resource-id': [carol, carol] }),
        ).toMatchObject({
          status: 400,
          body: { code: 'VALIDATION_FAILED', details: [{ path: 'x-resource-id' }] },
        });
      });

      it('answers 403 to a client naming another resource, before any stream', async () => {
        const input = { ...runInput('hi'), forwardedProps: { resourceId: 'dave' } };
        const run = await postRun(t.runUrl, input, {
          headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...proxied() },
        });
        expect(run.status).toBe(403);
        expect(await run.json()).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });
        expect(await runRecorded(input.runId)).toBe(0);
        expect((await api('/threads?resourceId=dave', proxied())).status).toBe(403);
        expect((await api('/threads', proxied({ 'x-resource-id': 'dave' }))).status).toBe(403);
        expect((await api(`/threads?resourceId=${carol}`, proxied({ 'x-resource-id': carol }))).status).toBe(
          200,
        );
      });
    });

    describe('with AUTH_HEADER_PERCENT_DECODING=true (a proxy that percent-encodes the user)', () => {
      let t: TestApp;
      beforeAll(async () => {
        t = await startApp({
          AUTH_MODE: 'header',
          TRUSTED_PROXIES: '127.0.0.0/8',
          AUTH_HEADER_PERCENT_DECODING: 'true',
        });
      });
      afterAll(() => t.close());

      it('decodes the header; a raw byte, a broken escape or a decoded percent-escape is a 401', async () => {
        const url = `${t.baseUrl}/io-bridge/threads`;
        const josé = uid('josé');
        const own = await rawRequest(url, { 'x-auth-request-user': encodeURIComponent(josé) }, 'POST');
        expect(own).toMatchObject({ status: 201, body: { resourceId: josé } });
        const alice = uid('alice');
        for (const spelled of [rawUtf8(josé), `100%-${alice}`, encodeURIComponent(percentSpelling(alice))]) {
          expect({ spelled, ...(await rawRequest(url, { 'x-auth-request-user': spelled })) }).toEqual({
            spelled,
            status: 401,
            body: UNAUTHENTICATED,
          });
        }
        expect(
          await rawRequest(url, {
            'x-auth-request-user': [encodeURIComponent(josé), encodeURIComponent(josé)],
          }),
        ).toEqual({ status: 401, body: UNAUTHENTICATED });
      });
    });

    describe("another owner's run and thread streams (the owner is checked before any reader is counted)", () => {
      let t: TestApp;
      const api = caller(() => t);
      const as = (who: string) => ({ 'x-auth-request-user': who, accept: 'text/event-stream' });
      const opened: AbortController[] = [];
      beforeAll(async () => {
        t = await startApp({ AUTH_MODE: 'header', TRUSTED_PROXIES: '127.0.0.0/8' });
      });
      afterAll(async () => {
        opened.forEach((c) => c.abort());
        await t.close();
      });
      /** Lookups held by holdLookupsOf, let go after each test whatever happened. */
      const holds: Array<() => void> = [];
      afterEach(() => {
        holds.splice(0).forEach((release) => release());
        jest.restoreAllMocks();
      });

      /** A stream request; a 200 is kept open (closed after the tests), anything else read to its body. */
      const open = async (path: string, who: string) => {
        const controller = new AbortController();
        const res = await api(path, as(who), { signal: controller.signal });
        if (res.status === 200) opened.push(controller);
        const body = res.status === 200 ? undefined : ((await res.json()) as Record<string, unknown>);
        return { status: res.status, body };
      };

      /**
       * Holds `who`'s owner lookups of runs and threads until `release()`: requests in flight at the
       * owner check, deterministically; `held()` counts those waiting there.
       */
      const holdLookupsOf = (who: string) => {
        let release: () => void = () => undefined;
        const released = new Promise<void>((resolve) => (release = resolve));
        holds.push(release);
        let held = 0;
        const wait = async (scope: unknown) => {
          if (scope !== who) return;
          held++;
          await released;
        };
        const runs = t.app.get(RunsRepository);
        const threads = t.app.get(ThreadsRepository);
        const findRun = runs.findOne.bind(runs);
        const findThread = threads.find.bind(threads);
        jest
          .spyOn(runs, 'findOne')
          .mockImplementation((id, scope) => wait(scope).then(() => findRun(id, scope)));
        jest
          .spyOn(threads, 'find')
          .mockImplementation((id, scope) => wait(scope).then(() => findThread(id, scope)));
        return { release, held: () => held };
      };

      it("is a 404 like a missing id while the owner holds every reader, and takes none of the owner's readers", async () => {
        const alice = uid('alice');
        const bob = uid('bob');
        const threadId = uid('thread');
        const input = runInput('/tool get_city {"city":"x"}', {
          threadId,
          tools: [GET_CITY],
          forwardedProps: memoryOf(threadId),
        });
        // Alice's run waits for her browser's tool result: its stream stays open to readers.
        const live = await openRun(t.runUrl, input, { 'x-auth-request-user': alice });
        await live.waitFor((e) => e.type === 'TOOL_CALL_END');
        try {
          const routes = [`/runs/${input.runId}/events`, `/threads/${threadId}/events`];
          const missing = [`/runs/${uid('none')}/events`, `/threads/${uid('none')}/events`];
          // MAX_READERS_PER_RUN (10, the thread's cap too) less one, on each.
          for (const route of routes) {
            const readers = await Promise.all(Array.from({ length: 9 }, () => open(route, alice)));
            expect(readers.map((r) => r.status)).toEqual(Array(9).fill(200));
          }

          // Bob's requests are held at the owner check; Alice opens her last reader meanwhile.
          const hold = holdLookupsOf(bob);
          let answered = 0;
          const flood = routes.flatMap((route) =>
            Array.from({ length: 2 }, () => open(route, bob).finally(() => answered++)),
          );
          await eventually(() => Promise.resolve(hold.held() + answered === flood.length ? true : undefined));
          for (const route of routes)
            expect(await open(route, alice)).toEqual({ status: 200, body: undefined });
          hold.release();
          for (const refused of await Promise.all(flood)) {
            expect(refused).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
          }
          jest.restoreAllMocks();

          // Every reader is Alice's now: she is refused one more, Bob is told what a missing id tells him.
          for (const [i, route] of routes.entries()) {
            expect(await open(route, alice)).toMatchObject({
              status: 429,
              body: { code: 'TOO_MANY_READERS' },
            });
            const theirs = await Promise.all(Array.from({ length: 20 }, () => open(route, bob)));
            const none = await open(missing[i], bob);
            expect(none).toEqual({
              status: 404,
              body: { statusCode: 404, code: 'NOT_FOUND', message: expect.any(String) },
            });
            for (const refused of theirs) {
              expect({ status: refused.status, code: refused.body?.code }).toEqual({
                status: none.status,
                code: none.body?.code,
              });
            }
          }
        } finally {
          expect((await api(`/runs/${input.runId}/cancel`, as(alice), { method: 'POST' })).status).toBe(202);
          expect((await live.done).at(-1)?.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
        }
      });
    });

    it('answers 401 from an address outside TRUSTED_PROXIES, whatever X-Forwarded-For says', async () => {
      const t = await startApp({ AUTH_MODE: 'header', TRUSTED_PROXIES: '10.0.0.0/8' });
      try {
        const res = await caller(() => t)('/threads', proxied({ 'x-forwarded-for': '10.1.2.3' }));
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({
          statusCode: 401,
          code: 'UNAUTHENTICATED',
          message: 'Authentication required',
        });
      } finally {
        await t.close();
      }
    });

    it('matches an IPv4-mapped IPv6 peer (::ffff:127.0.0.1) against an IPv4 CIDR, with a custom header', async () => {
      const app = await createApp(
        loadConfig({
          DATABASE_URL: process.env.E2E_DATABASE_URL,
          LOG_LEVEL: 'error',
          AUTH_MODE: 'header',
          AUTH_HEADER: 'X-Forwarded-User',
          TRUSTED_PROXIES: '127.0.0.1/32',
        }),
        serviceLogs,
      );
      // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d.
      await app.listen(0, '::');
      try {
        const { port } = app.getHttpServer().address() as AddressInfo;
        const res = await fetch(`http://127.0.0.1:${port}/io-bridge/threads`, {
          headers: { 'x-forwarded-user': carol },
        });
        expect(res.status).toBe(200);
        const refused = await fetch(`http://127.0.0.1:${port}/io-bridge/threads`, {
          headers: { 'x-auth-request-user': carol },
        });
        expect(refused.status).toBe(401);
      } finally {
        await app.close();
      }
    });
  });
});
