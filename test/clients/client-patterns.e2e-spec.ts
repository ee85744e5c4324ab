import { startApp, TestApp } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { openRun, postRun, runInput } from '../support/sse';

/** Backtracks exponentially in V8 on a run of a's with a mismatch at the end: hours at 40 characters. */
const CATASTROPHIC = '^(a+)+$';
const EVIL = `${'a'.repeat(40)}!`;
/** A stall of the event loop longer than this is what the test exists to catch. */
const MAX_STALL_MS = 500;

const toolWith = (pattern: string) => ({
  name: 'pick',
  description: 'Asks the browser to pick',
  parameters: { type: 'object', properties: { s: { type: 'string', pattern } }, required: ['s'] },
});
const outputWith = (pattern: string) => ({
  structuredOutput: { schema: { type: 'object', properties: { s: { type: 'string', pattern } } } },
});

/** The longest event-loop stall of the server since the previous call, from its prom-client gauge. */
async function maxLoopStallMs(app: BuiltService): Promise<number> {
  const text = await (await fetch(`${app.origin}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const line = text.split('\n').find((l) => l.startsWith('nodejs_eventloop_lag_max_seconds '));
  if (!line) throw new Error('no nodejs_eventloop_lag_max_seconds in /metrics');
  return Number(line.split(' ')[1]) * 1000;
}

/** Time for GET /health/live; a server that does not answer within 5 s counts as 5 s. */
async function liveMs(app: BuiltService): Promise<number> {
  const started = performance.now();
  try {
    const res = await fetch(`${app.origin}/health/live`, { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(200);
  } catch (err) {
    if ((err as Error).name !== 'TimeoutError') throw err;
  }
  return performance.now() - started;
}

/** Asks /health/live back to back until `until` settles (at least once): the slowest answer. */
async function slowestLiveMs(app: BuiltService, until: Promise<unknown>): Promise<number> {
  let settled = false;
  void until.then(
    () => (settled = true),
    () => (settled = true),
  );
  let slowest = 0;
  do slowest = Math.max(slowest, await liveMs(app));
  while (!settled && slowest < MAX_STALL_MS);
  return slowest;
}

const ended = (e: Record<string, any>) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR';

// The server runs in a child process: a frozen event loop there fails these tests within seconds
// (the probes time out) instead of freezing jest with it.
describe('client regular expressions never stall the server', () => {
  let app: BuiltService;
  beforeEach(async () => {
    app = await startBuiltService();
  });
  afterEach(() => app.kill());

  it("a frontend tool's catastrophic pattern: the arguments are refused while /health/live answers at once", async () => {
    // Warm-up with a short mismatch, so the stall measured next is the pattern's, not first-run loading.
    const warm = await openRun(
      `${app.base}/run`,
      runInput('/tool pick {"s":"b"}', { tools: [toolWith(CATASTROPHIC)] }),
    );
    await warm.waitFor(ended);
    await maxLoopStallMs(app);

    const input = runInput(`/tool pick {"s":"${EVIL}"}`, { tools: [toolWith(CATASTROPHIC)] });
    const run = await openRun(`${app.base}/run`, input);
    const end = run.waitFor(ended, 20_000);
    expect(await slowestLiveMs(app, end)).toBeLessThan(MAX_STALL_MS);
    expect(await end).toMatchObject({ type: 'RUN_FINISHED' });
    const result = run.frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toMatchObject({ error: true });
    expect(result.content).toContain('must match pattern');
    expect(await maxLoopStallMs(app)).toBeLessThan(MAX_STALL_MS);
  });

  it('a structured output catastrophic pattern: the answer is refused while /health/live answers at once', async () => {
    const warm = await openRun(
      `${app.base}/run`,
      runInput('/json {"s":"b"}', { forwardedProps: outputWith(CATASTROPHIC) }),
    );
    await warm.waitFor(ended);
    await maxLoopStallMs(app);

    const input = runInput(`/json {"s":"${EVIL}"}`, { forwardedProps: outputWith(CATASTROPHIC) });
    const run = await openRun(`${app.base}/run`, input);
    const end = run.waitFor(ended, 20_000);
    expect(await slowestLiveMs(app, end)).toBeLessThan(MAX_STALL_MS);
    expect(await end).toMatchObject({
      type: 'RUN_ERROR',
      code: 'STRUCTURED_OUTPUT_INVALID',
    });
    expect(await maxLoopStallMs(app)).toBeLessThan(MAX_STALL_MS);
  });
});

describe('client patterns RE2 cannot run', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it.each([
    ['a backreference', '(a)\\1'],
    ['a lookahead', '^(?=a)a+$'],
  ])('refuses a tool whose parameters use %s with 400, naming where', async (_, pattern) => {
    const res = await postRun(t.runUrl, runInput('hi', { tools: [toolWith(pattern)] }));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    expect(body.details).toEqual([
      {
        path: 'tools.0.parameters',
        message: expect.stringContaining('/properties/s/pattern: the pattern is not supported'),
      },
    ]);
  });

  it('refuses a structured output schema with a lookbehind in a patternProperties key with 400', async () => {
    const schema = { type: 'object', patternProperties: { '(?<=x)y': { type: 'string' } } };
    const res = await postRun(t.runUrl, runInput('hi', { forwardedProps: { structuredOutput: { schema } } }));
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(body.details).toEqual([
      {
        path: 'forwardedProps.structuredOutput.schema',
        message: expect.stringContaining('/patternProperties key "(?<=x)y": the pattern is not supported'),
      },
    ]);
  });
});
