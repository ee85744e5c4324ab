import { BuiltService, startBuiltService } from './support/built-service';
import { readRun, runInput } from './support/sse';
import { assertStreamRules } from './support/stream-rules';

const MANY = 100_000;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Every count and size a client can make large is checked before validation walks the body (issue 22):
 * the built service refuses each with its envelope, and the answer is the limit's, not the validator's.
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
});
