import { connect } from 'node:net';
import { BuiltService, startBuiltService } from '../support/built-service';
import { readRun, runInput } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const MANY = 100_000;
const BODY_LIMIT = 4 * 1024 * 1024;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Every count and size a client can make large is checked before validation walks the body
 * (docs/limits.md#request-bodies): the built service refuses each with its envelope, and the answer is the
 * limit's, not the validator's.
 */
describe('request bodies are bounded before they are validated (built service)', () => {
  let service: BuiltService | undefined;
  beforeAll(async () => {
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      MAX_JSON_DEPTH: '12',
      MAX_STRING_LENGTH: '5000',
      MAX_CONTENT_PARTS: '8',
      MAX_FORWARDED_PROPS_KEYS: '50',
      MAX_JSON_VALUES: '2000',
      MAX_BODY_BYTES: String(BODY_LIMIT),
    });
  }, 90_000);
  afterAll(() => service?.stop());

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${service!.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
  };
  const expectRefused = async (
    path: string,
    body: unknown,
    want: { status: number; code: string; path: string },
  ) => {
    const res = await post(path, body);
    expect({ status: res.status, text: res.text.slice(0, 300) }).toMatchObject({ status: want.status });
    expect(res.json()).toEqual({
      statusCode: want.status,
      code: want.code,
      message: expect.any(String),
      details: [{ path: want.path, message: expect.any(String) }],
    });
  };

  // Invalid entries: validation would name the first bad one (`tools.0.name`); the limit names the list.
  it.each([
    ['100,000 tools', { tools: range(MANY).map(() => ({})) }, 'tools'],
    ['100,000 messages', { messages: range(MANY).map(() => ({ role: 'nobody' })) }, 'messages'],
    ['100,000 context entries', { context: range(MANY).map(() => ({})) }, 'context'],
  ])('%s: 400 naming the list, not an entry', async (_name, extra, path) => {
    await expectRefused('/run', runInput('hi', extra), { status: 400, code: 'VALIDATION_FAILED', path });
  });

  it('100,000 content parts in a message: 400 naming its content', async () => {
    const content = range(MANY).map(() => ({ type: 'text', text: 'x' }));
    const input = runInput('hi', { messages: [{ id: 'm1', role: 'user', content }] });
    await expectRefused('/run', input, {
      status: 400,
      code: 'VALIDATION_FAILED',
      path: 'messages.0.content',
    });
  });

  it('100,000 forwardedProps keys: 413, though forwardedProps tolerates anything else', async () => {
    const forwardedProps = Object.fromEntries(range(MANY).map((i) => [`k${i}`, i]));
    await expectRefused('/run', runInput('hi', { forwardedProps }), {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      path: 'forwardedProps',
    });
  });

  it('forwardedProps keys are counted at any depth', async () => {
    const forwardedProps = { a: range(30).map((i) => ({ [`k${i}`]: i, [`j${i}`]: i })) };
    await expectRefused('/run', runInput('hi', { forwardedProps }), {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      path: 'forwardedProps',
    });
  });

  it('more JSON values than MAX_JSON_VALUES anywhere (state is passed on as is): 413', async () => {
    await expectRefused('/run', runInput('hi', { state: range(MANY) }), {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      path: 'state',
    });
  });

  it('a string longer than MAX_STRING_LENGTH: 413 naming it', async () => {
    await expectRefused('/run', runInput('x'.repeat(5001)), {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      path: 'messages.0.content',
    });
  });

  it('nesting deeper than MAX_JSON_DEPTH: 400', async () => {
    let state: unknown = 1;
    for (let i = 0; i < 13; i++) state = { s: state };
    const res = await post('/run', runInput('hi', { state }));
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: expect.stringMatching(/^state/) }],
    });
  });

  it('every route with a body has the same bounds (POST /threads metadata)', async () => {
    const metadata = Object.fromEntries(range(MANY).map((i) => [`k${i}`, i]));
    await expectRefused(
      '/threads',
      { metadata },
      { status: 413, code: 'PAYLOAD_TOO_LARGE', path: 'metadata' },
    );
  });

  // A JSON body is checked against the limits a slice of its text at a time, before it is
  // parsed (docs/limits.md#request-bodies); the refusals are the ones the parsed body got.
  it('bodies far over the limits, all at once, are each refused with their code while the service goes on answering', async () => {
    const refused = [
      ...Array.from({ length: 4 }, () =>
        expectRefused('/run', runInput('hi', { tools: range(MANY).map((i) => ({ name: `tool_${i}` })) }), {
          status: 400,
          code: 'VALIDATION_FAILED',
          path: 'tools',
        }),
      ),
      ...Array.from({ length: 4 }, () =>
        expectRefused(
          '/run',
          runInput('hi', { forwardedProps: Object.fromEntries(range(MANY).map((i) => [`k${i}`, i])) }),
          { status: 413, code: 'PAYLOAD_TOO_LARGE', path: 'forwardedProps' },
        ),
      ),
      expectRefused('/run', runInput('hi', { state: range(500_000).map(() => 0) }), {
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
        path: 'state',
      }),
    ];
    const live = fetch(`${service!.origin}/health/live`);
    const input = runInput('hi');
    const run = fetch(`${service!.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input),
    });
    expect((await live).status).toBe(200);
    const served = await run;
    expect(served.status).toBe(200);
    assertStreamRules(await (await readRun(served)).done, input);
    await Promise.all(refused);
  });

  it.each([
    [
      'cut short past MAX_JSON_VALUES (a 413 it outranks)',
      JSON.stringify(runInput('hi', { state: range(5000) })).slice(0, -1),
    ],
    ['with a stray comma', '{"threadId":"t",}'],
  ])('a body that is not JSON, %s: 400 as before', async (_name, body) => {
    const res = await fetch(`${service!.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    // Fastify's own error for it, as its JSON parser answered before.
    expect(await res.json()).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: expect.stringMatching(/not valid JSON/),
    });
  });

  it('a body that sets __proto__ is refused (prototype poisoning), as Fastify refuses it', async () => {
    const res = await fetch(`${service!.base}/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"metadata":{"__proto__":{"admin":true}}}',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('a run at the limits is served', async () => {
    let state: unknown = 1;
    for (let i = 0; i < 10; i++) state = { s: state };
    const forwardedProps = Object.fromEntries(range(50).map((i) => [`k${i}`, i]));
    const content = range(8).map(() => ({ type: 'text', text: 'y'.repeat(100) }));
    const input = runInput('hi', { state, forwardedProps, messages: [{ id: 'm1', role: 'user', content }] });
    const res = await fetch(`${service!.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input),
    });
    expect(res.status).toBe(200);
    const run = await readRun(res);
    assertStreamRules(await run.done, input);
  });

  /**
   * A raw HTTP/1.1 request whose body goes out in the given pieces, each written once the previous
   * was flushed, with Nagle off: the body reaches the service in several reads. The raw response.
   */
  const rawPost = (path: string, headers: Record<string, string>, pieces: Buffer[]): Promise<string> =>
    new Promise((resolve, reject) => {
      const url = new URL(`${service!.base}${path}`);
      const socket = connect(Number(url.port), url.hostname);
      socket.setNoDelay(true);
      let response = '';
      socket.on('data', (data) => (response += data.toString('utf8')));
      socket.on('end', () => resolve(response));
      // A refusal may close the connection while the rest of the body is still being written.
      socket.on('error', (err) => (response ? resolve(response) : reject(err)));
      const send = async () => {
        const head = Object.entries({ host: url.host, connection: 'close', ...headers })
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('');
        socket.write(`POST ${url.pathname} HTTP/1.1\r\n${head}\r\n`);
        for (const piece of pieces) {
          if (socket.destroyed) break;
          await new Promise<void>((done) => socket.write(piece, () => done()));
          await new Promise((next) => setImmediate(next));
        }
      };
      socket.on(
        'connect',
        () => void send().catch((err: Error) => (response ? resolve(response) : reject(err))),
      );
    });
  const statusOf = (raw: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
  const jsonOf = (raw: string) =>
    JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;

  it('a body read a few bytes at a time keeps every character split between two reads', async () => {
    const note = 'héllo, 世界 🙂 ' + 'ü'.repeat(40);
    const body = Buffer.from(JSON.stringify({ metadata: { note } }));
    // Pieces of 1 to 3 bytes: most multi-byte characters are cut between two reads.
    const pieces: Buffer[] = [];
    for (let at = 0, size = 1; at < body.length; at += size, size = (size % 3) + 1) {
      pieces.push(body.subarray(at, at + size));
    }
    const raw = await rawPost(
      '/threads',
      { 'content-type': 'application/json', 'content-length': String(body.length) },
      pieces,
    );
    expect(statusOf(raw)).toBe(201);
    const created = jsonOf(raw) as { id: string };
    const read = await fetch(`${service!.base}/threads/${created.id}`);
    expect(((await read.json()) as { metadata: unknown }).metadata).toEqual({ note });
  });

  it('a chunked body (no Content-Length) over MAX_BODY_BYTES is refused 413 once it passes the limit', async () => {
    const chunk = (data: string) => Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`);
    // Twice the limit, 64 KiB a chunk of the chunked encoding; the service answers before it is all sent.
    const pieces = [chunk('{"metadata":{"x":"')];
    for (let i = 0; i < (2 * BODY_LIMIT) / (64 * 1024); i++) pieces.push(chunk(' '.repeat(64 * 1024)));
    const raw = await rawPost(
      '/threads',
      { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      pieces,
    );
    expect(statusOf(raw)).toBe(413);
    expect(jsonOf(raw)).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('a Content-Length over MAX_BODY_BYTES is refused 413 before the body is read', async () => {
    const raw = await rawPost(
      '/threads',
      { 'content-type': 'application/json', 'content-length': String(BODY_LIMIT + 1) },
      [Buffer.from('{"metadata":{}')],
    );
    expect(statusOf(raw)).toBe(413);
    expect(jsonOf(raw)).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('a form body is parsed as before (the JSON parser is the only one replaced)', async () => {
    const res = await fetch(`${service!.base}/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'title=from+a+form',
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ title: 'from a form' });
  });
});
