import { connect } from 'node:net';
import fc from 'fast-check';
import { startApp, TestApp } from '../support/app';
import { openRun, runInput, uid } from '../support/sse';

const NUL = '\u0000';
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';
const deep = (levels: number): unknown => {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = i % 2 ? { k: value } : [value];
  return value;
};

type Envelope = { statusCode: number; code: string; message: string; details?: unknown[] };

/** The error envelope of docs/protocol.md#routes, exactly: no Fastify `error` field, no stray keys. */
function expectEnvelope(status: number, body: unknown, code: string): void {
  const e = body as Envelope;
  expect(Object.keys(e).sort()).toEqual(
    e.details === undefined
      ? ['code', 'message', 'statusCode']
      : ['code', 'details', 'message', 'statusCode'],
  );
  expect(e.statusCode).toBe(status);
  expect(e.code).toBe(code);
  expect(typeof e.message).toBe('string');
}

/** Sends `raw` bytes on a fresh connection and returns everything the server wrote before closing. */
function rawRequest(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(raw));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (out += chunk));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

describe('hostile input: a clear 4xx in the error envelope, never a 500', () => {
  let t: TestApp;
  let base: string;
  const send = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-resource-id': 'mallory' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as unknown };
  };

  beforeAll(async () => {
    t = await startApp({ MAX_CONTEXT: '3' });
    base = `${t.baseUrl}/io-bridge`;
  });
  afterAll(() => t.close());

  describe('strings Postgres cannot store', () => {
    const bad = {
      NUL: `a${NUL}b`,
      'lone high surrogate': `a${LONE_HIGH}b`,
      'lone low surrogate': `${LONE_LOW}`,
    };
    const bodies = (s: string): Array<[string, string, string, unknown]> => [
      ['POST', '/threads', 'title', { title: s }],
      ['POST', '/threads', 'metadata value', { metadata: { note: s } }],
      ['POST', '/threads', 'metadata key', { metadata: { [s]: 1 } }],
      ['POST', '/threads', 'nested metadata', { metadata: { a: [{ b: s }] } }],
      ['PATCH', '/threads/t-hostile', 'title', { title: s }],
      ['POST', '/run', 'message content', runInput(s)],
      [
        'POST',
        '/run',
        'message name',
        runInput('hi', { messages: [{ id: 'm', role: 'user', content: 'x', name: s }] }),
      ],
      [
        'POST',
        '/run',
        'tool call arguments',
        runInput('hi', {
          messages: [
            {
              id: 'm1',
              role: 'assistant',
              toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: `{"a":"${s}"}` } }],
            },
          ],
        }),
      ],
      ['POST', '/run', 'tool description', runInput('hi', { tools: [{ name: 'f', description: s }] })],
      ['POST', '/run', 'context value', runInput('hi', { context: [{ description: 'd', value: s }] })],
      ['POST', '/run', 'forwardedProps', runInput('hi', { forwardedProps: { extra: s } })],
      ['POST', '/runs/r-x/tool-calls/c-x/result', 'tool result', { content: s }],
    ];
    for (const [name, s] of Object.entries(bad)) {
      it.each(bodies(s))(
        `${name}: %s %s (%s) is 400 VALIDATION_FAILED`,
        async (method, path, _what, body) => {
          const res = await send(method, path, body);
          expect(res.status).toBe(400);
          expectEnvelope(400, res.body, 'VALIDATION_FAILED');
        },
      );
    }

    it('a paired surrogate (an emoji) is stored faithfully', async () => {
      const res = await send('POST', '/threads', { title: 'ok 😀', metadata: { '😀': '\ud83d\ude00' } });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ title: 'ok 😀', metadata: { '😀': '😀' } });
    });
  });

  describe('%00 in a path parameter', () => {
    it.each([
      ['GET', '/threads/a%00b'],
      ['PATCH', '/threads/a%00b'],
      ['DELETE', '/threads/a%00b'],
      ['GET', '/threads/a%00b/messages'],
      ['GET', '/runs/a%00b'],
      ['POST', '/runs/a%00b/cancel'],
      ['POST', '/runs/a%00b/tool-calls/c1/result'],
      ['POST', '/runs/r1/tool-calls/c%00d/result'],
      ['GET', '/agents/a%00b'],
    ])('%s %s is 400 VALIDATION_FAILED', async (method, path) => {
      const body = method === 'POST' || method === 'PATCH' ? { content: 'x', title: 'x' } : undefined;
      const res = await send(method, path, body);
      expect(res.status).toBe(400);
      expectEnvelope(400, res.body, 'VALIDATION_FAILED');
    });

    it('%00 in a query value is 400', async () => {
      const res = await send('GET', '/threads?cursor=a%00b');
      expect(res.status).toBe(400);
      expectEnvelope(400, res.body, 'VALIDATION_FAILED');
    });

    it('a URL that does not decode is 400 in the envelope', async () => {
      const res = await send('GET', '/threads/%E0%A4%A');
      expect(res.status).toBe(400);
      expectEnvelope(400, res.body, 'VALIDATION_FAILED');
    });

    it('a 200-character id works in every route (Fastify allows 100 by default)', async () => {
      const id = 't'.repeat(200);
      expect((await send('POST', '/threads', { id })).status).toBe(201);
      expect((await send('GET', `/threads/${id}`)).status).toBe(200);
      expect((await send('GET', `/threads/${id}/messages`)).status).toBe(200);
      expect((await send('GET', `/runs/${'r'.repeat(200)}`)).status).toBe(404);
    });
  });

  describe('deep JSON', () => {
    it.each([
      ['POST', '/threads', (d: unknown) => ({ metadata: { d } })],
      ['PATCH', '/threads/t-deep', (d: unknown) => ({ metadata: { d } })],
      ['POST', '/run', (d: unknown) => runInput('hi', { forwardedProps: { d } })],
      ['POST', '/run', (d: unknown) => runInput('hi', { state: d })],
      ['POST', '/runs/r-x/tool-calls/c-x/result', (d: unknown) => ({ content: d })],
    ])('%s %s nested 3,000 deep is 400', async (method, path, wrap) => {
      const res = await send(method, path, wrap(deep(3000)));
      expect(res.status).toBe(400);
      expectEnvelope(400, res.body, 'VALIDATION_FAILED');
      expect(JSON.stringify(res.body)).toContain('nesting deeper than 64 levels');
    });

    it('nesting within the bound is accepted', async () => {
      const res = await send('POST', '/threads', { metadata: { d: deep(50) } });
      expect(res.status).toBe(201);
    });

    it('the service still answers after a 100,000-deep body', async () => {
      const res = await send('POST', '/run', `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
      expect(res.status).toBe(400);
      expect((await fetch(`${t.baseUrl}/health/live`)).status).toBe(200);
    });
  });

  describe('shapes class-validator let through', () => {
    it.each([
      [
        'toolCalls a string on a user message',
        { messages: [{ id: 'm', role: 'user', content: 'x', toolCalls: 'x' }] },
      ],
      [
        'toolCalls an object on a user message',
        { messages: [{ id: 'm', role: 'user', content: 'x', toolCalls: {} }] },
      ],
      ['toolCalls holding a number', { messages: [{ id: 'm', role: 'assistant', toolCalls: [1] }] }],
      ['messages: [[]]', { messages: [[]] }],
      ['messages: [null]', { messages: [null] }],
      ['messages: ["x"]', { messages: ['x'] }],
      ['tools: [[]]', { tools: [[]] }],
      ['context: [1]', { context: [1] }],
    ])('%s is 400', async (_name, extra) => {
      const res = await send('POST', '/run', runInput('hi', extra));
      expect(res.status).toBe(400);
      expectEnvelope(400, res.body, 'VALIDATION_FAILED');
    });

    it('context is bounded like messages and tools (MAX_CONTEXT)', async () => {
      const entry = { description: 'd', value: 'v' };
      const over = await send('POST', '/run', runInput('hi', { context: [entry, entry, entry, entry] }));
      expect(over.status).toBe(400);
      expectEnvelope(400, over.body, 'VALIDATION_FAILED');
      const within = await openRun(t.runUrl, runInput('hi', { context: [entry, entry, entry] }), {
        'x-resource-id': 'mallory',
      });
      expect((await within.done).at(-1)?.event.type).toBe('RUN_FINISHED');
    });
  });

  describe("requests Node's parser refuses", () => {
    const port = () => Number(new URL(t.baseUrl).port);

    it.each([
      ['a malformed request line', 'GET /x y z\r\n\r\n'],
      ['a header without a colon', 'GET /health/live HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'],
      [
        'a bad Content-Length',
        'POST /io-bridge/threads HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}',
      ],
    ])('%s is 400 in the envelope', async (_name, raw) => {
      const out = await rawRequest(port(), raw);
      expect(out).toMatch(/^HTTP\/1\.1 400 /);
      expect(out).toMatch(/content-type: application\/json/i);
      expectEnvelope(400, JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)), 'VALIDATION_FAILED');
    });

    it('headers too large are 431 HEADERS_TOO_LARGE in the envelope', async () => {
      const out = await rawRequest(
        port(),
        `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      expect(out).toMatch(/^HTTP\/1\.1 431 /);
      expectEnvelope(431, JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)), 'HEADERS_TOO_LARGE');
    });
  });

  it('any JSON a client can send to POST /threads is 201 or an enveloped 400 (property)', async () => {
    const text = fc.string({
      unit: fc.constantFrom('a', 'é', NUL, LONE_HIGH, LONE_LOW, '\ud83d\ude00', '"', '\\'),
    });
    await fc.assert(
      fc.asyncProperty(fc.dictionary(text, fc.jsonValue({ maxDepth: 3 })), text, async (metadata, title) => {
        const res = await send('POST', '/threads', { id: uid('prop'), title, metadata });
        if (res.status !== 201) {
          expect(res.status).toBe(400);
          expectEnvelope(400, res.body, 'VALIDATION_FAILED');
        }
      }),
      { numRuns: 150 },
    );
  });
});
