import { db, eventually, startApp, TestApp } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { dbProxy, DbProxy } from '../support/db-proxy';
import { failedWith, LEVEL, LogLine, serviceLogs } from '../support/log-sink';
import { Frame, openRun, postRun, runInput, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** Short database timeouts, so an outage shows within seconds (the defaults are 5 s, 10 s and 12 s). */
const TIMEOUTS = {
  DATABASE_CONNECT_TIMEOUT_MS: '1000',
  DATABASE_STATEMENT_TIMEOUT_MS: '1000',
  DATABASE_QUERY_TIMEOUT_MS: '1500',
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '2000',
};
/** The longest a request may take to fail: a connect timeout or a query timeout, with a margin. */
const ANSWER_WITHIN_MS = 1000 + 1500 + 1000;
/** A client gives up here instead of hanging the suite: the old behaviour, never the expected one. */
const CLIENT_GIVES_UP_MS = 8000;

const PICK = {
  name: 'pick_color',
  description: 'Asks the browser for a colour',
  parameters: { type: 'object', properties: { hint: { type: 'string' } } },
};

type Answer = { status: number; body: Record<string, unknown>; retryAfter: string | null; ms: number };

/** One request with its status, JSON body, Retry-After and duration; rejects if no answer comes in time. */
async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json', ...init.headers },
    signal: AbortSignal.timeout(CLIENT_GIVES_UP_MS),
  });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, retryAfter: res.headers.get('retry-after'), ms: Date.now() - started };
}

/** The routes a client uses, each touching the database before it can answer. */
function everyRoute(t: TestApp): Record<string, Promise<Answer>> {
  const api = `${t.baseUrl}/io-bridge`;
  const post = (path: string, body: unknown) =>
    call(`${api}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return {
    'POST /threads': post('/threads', { id: uid('thread') }),
    'GET /threads': call(`${api}/threads`),
    'PATCH /threads/:id': call(`${api}/threads/${uid('thread')}`, {
      method: 'PATCH',
      body: JSON.stringify({ title: 'x' }),
    }),
    'POST /run': post('/run', runInput('hi')),
    'GET /runs/:id': call(`${api}/runs/${uid('run')}`),
    'POST /runs/:id/cancel': post(`/runs/${uid('run')}/cancel`, {}),
    'POST tool result': post(`/runs/${uid('run')}/tool-calls/tc1/result`, { content: 'x' }),
  };
}

/** Every route answered 503 SERVICE_UNAVAILABLE with Retry-After, in the envelope, naming no internals. */
async function expectUnavailable(routes: Record<string, Promise<Answer>>): Promise<number> {
  let slowest = 0;
  for (const [route, answer] of Object.entries(routes)) {
    const a = await answer;
    expect({ route, status: a.status, retryAfter: a.retryAfter, body: a.body }).toEqual({
      route,
      status: 503,
      retryAfter: '5',
      body: {
        statusCode: 503,
        code: 'SERVICE_UNAVAILABLE',
        message: 'The database is unavailable; retry later',
      },
    });
    slowest = Math.max(slowest, a.ms);
  }
  return slowest;
}

/** Resolves with the run's frames once it ended, or rejects after `ms`: a stream with no terminal event fails. */
function endsWithin(done: Promise<Frame[]>, ms: number): Promise<Frame[]> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    done,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the stream did not end within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const lostEnd = (line: LogLine) => /could not record its end/.test(line.msg ?? '');

// The lines this file provokes: requests refused with 503, runs whose end could not be recorded.
serviceLogs.expect(failedWith(503));
serviceLogs.expect(lostEnd);

/** The error lines of the `count` requests refused with 503, once all are written: one line each, no stack. */
async function refusedLines(count: number): Promise<LogLine[]> {
  const lines = await serviceLogs.takeWhen(failedWith(503), count);
  expect(lines.map((l) => ({ level: l.level, msg: l.msg, err: l.err }))).toEqual(
    Array.from({ length: count }, () => ({
      level: LEVEL.error,
      msg: 'request failed with status code 503',
      err: undefined,
    })),
  );
  return lines;
}

/** The one error line naming the run whose end could not be recorded. */
async function lostEndLine(runId: string): Promise<void> {
  const lines = await serviceLogs.takeWhen((l) => lostEnd(l) && l.runId === runId);
  expect(lines).toEqual([expect.objectContaining({ level: LEVEL.error, context: 'RunRecorder', runId })]);
}

const ready = (t: TestApp) => call(`${t.baseUrl}/health/ready`);
const readyAgain = (t: TestApp) =>
  eventually(async () => ((await ready(t)).status === 200 ? true : undefined), 15_000);

describe('a database that is down', () => {
  let proxy: DbProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await dbProxy(new URL(process.env.E2E_DATABASE_URL!));
    t = await startApp({ DATABASE_URL: proxy.url, ...TIMEOUTS });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  it('answers 503 SERVICE_UNAVAILABLE with Retry-After on every route, and serves again once it is back', async () => {
    expect((await call(`${t.baseUrl}/io-bridge/threads`)).status).toBe(200);
    await proxy.stop();

    await expectUnavailable(everyRoute(t));
    const refused = await refusedLines(7);
    expect(refused.map((l) => l.req!.method).sort()).toEqual([
      'GET',
      'GET',
      'PATCH',
      'POST',
      'POST',
      'POST',
      'POST',
    ]);
    const notReady = await ready(t);
    expect(notReady).toMatchObject({ status: 503, retryAfter: '5', body: { code: 'SERVICE_UNAVAILABLE' } });

    await proxy.resume();
    await readyAgain(t);
    const input = runInput('back again');
    const res = await postRun(t.runUrl, input);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('RUN_FINISHED');
  });
});

describe('a database that freezes (accepts TCP, never answers)', () => {
  let proxy: DbProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await dbProxy(new URL(process.env.E2E_DATABASE_URL!));
    t = await startApp({ DATABASE_URL: proxy.url, ...TIMEOUTS });
  });
  // A test that fails while the database is frozen leaves the next one a working database.
  afterEach(() => proxy.resume());
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  it('answers 503 within the timeouts instead of hanging, readiness within a second, and recovers when it thaws', async () => {
    expect((await call(`${t.baseUrl}/io-bridge/threads`)).status).toBe(200);
    expect((await ready(t)).status).toBe(200);
    proxy.freeze();

    const slowest = await expectUnavailable(everyRoute(t));
    expect(slowest).toBeLessThan(ANSWER_WITHIN_MS);
    await refusedLines(7);
    const notReady = await ready(t);
    expect(notReady).toMatchObject({ status: 503, body: { code: 'SERVICE_UNAVAILABLE' } });
    expect(notReady.ms).toBeLessThan(1000);

    await proxy.resume();
    await readyAgain(t);
    const created = await call(`${t.baseUrl}/io-bridge/threads`, {
      method: 'POST',
      body: JSON.stringify({ id: uid('thread') }),
    });
    expect(created.status).toBe(201);
    const res = await postRun(t.runUrl, runInput('thawed'));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('RUN_FINISHED');
  });

  it('ends a run whose end cannot be recorded with RUN_ERROR SERVICE_UNAVAILABLE, everything closed before it', async () => {
    const input = runInput('/slow 150 one two three four five six');
    const live = await openRun(t.runUrl, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    proxy.freeze();
    const frozenAt = Date.now();

    const frames = await endsWithin(live.done, CLIENT_GIVES_UP_MS);
    const endedAfter = Date.now() - frozenAt;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'SERVICE_UNAVAILABLE' });
    expect(frames.map((f) => f.event.type)).toContain('TEXT_MESSAGE_END');
    // Its end could not be stored: it names no id of the run's log.
    expect(frames.at(-1)!.unlogged).toBe(true);
    // The model's own second (six deltas, 150 ms apart), then one query or connect timeout.
    expect(endedAfter).toBeLessThan(1000 + ANSWER_WITHIN_MS);
    await lostEndLine(input.runId);

    await proxy.resume();
    await readyAgain(t);
    const res = await postRun(t.runUrl, runInput('after a lost end'));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('RUN_FINISHED');
  });
});

describe('a run waiting on a frontend tool when the database freezes', () => {
  let proxy: DbProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await dbProxy(new URL(process.env.E2E_DATABASE_URL!));
    // Renewals every second: a lease not renewed for 1.5 s stops its run, before it can lapse at 3 s.
    t = await startApp({ DATABASE_URL: proxy.url, ...TIMEOUTS, RUN_LEASE_MS: '3000' });
  });
  // A test that fails while the database is frozen leaves the next one a working database.
  afterEach(() => proxy.resume());
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  const toolRun = () => runInput('/tool pick_color {"hint":"warm"}', { tools: [PICK] });

  it('ends with RUN_ERROR SERVICE_UNAVAILABLE when its lease cannot be renewed; afterwards new connections (LISTEN too) carry a tool result', async () => {
    const input = toolRun();
    const live = await openRun(t.runUrl, input);
    await live.waitFor((e) => e.type === 'TOOL_CALL_END');
    proxy.freeze();
    const frozenAt = Date.now();

    const frames = await endsWithin(live.done, CLIENT_GIVES_UP_MS);
    const endedAfter = Date.now() - frozenAt;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({
      type: 'RUN_ERROR',
      code: 'SERVICE_UNAVAILABLE',
      message: 'The database is unavailable; retry later',
    });
    // Lease check (at most 1.5 s + one renewal period of 1 s), then the end write's timeout.
    expect(endedAfter).toBeLessThan(2500 + ANSWER_WITHIN_MS);
    await lostEndLine(input.runId);

    // The frozen connections never come back (a NAT that dropped them): only replacements work.
    await proxy.resume({ forgetFrozen: true });
    await readyAgain(t);
    // Idle pooled connections frozen with the database fail their next query (and are replaced): retry those.
    const { again, run } = await eventually(async () => {
      const candidate = toolRun();
      try {
        return { again: candidate, run: await openRun(t.runUrl, candidate) };
      } catch (err) {
        if (!/run refused: 503/.test((err as Error).message)) throw err;
        return undefined;
      }
    }, 20_000);
    const end = await run.waitFor((e) => e.type === 'TOOL_CALL_END');
    const posted = await call(
      `${t.baseUrl}/io-bridge/runs/${again.runId}/tool-calls/${end.toolCallId}/result`,
      {
        method: 'POST',
        body: JSON.stringify({ content: 'teal' }),
      },
    );
    expect(posted.status).toBe(202);
    const after = await endsWithin(run.done, CLIENT_GIVES_UP_MS);
    assertStreamRules(after, again);
    expect(after.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(after.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event.content).toBe('teal');
  });
});

describe('a run whose lease cannot be renewed, with the driver timeouts at their defaults', () => {
  let proxy: DbProxy;
  let service: BuiltService;
  // The built service, in a process of its own. Run inside the test runner, its event loop stalled
  // 200 to 500 ms on the runner's own work as the run stopped (measured), eating the margin this checks.
  beforeAll(async () => {
    proxy = await dbProxy(new URL(process.env.E2E_DATABASE_URL!));
    // Connect 5 s, statement 10 s, query 12 s: all longer than the 3 s lease.
    service = await startBuiltService({ DATABASE_URL: proxy.url, RUN_LEASE_MS: '3000' });
  }, 60_000);
  afterEach(() => proxy.resume());
  afterAll(async () => {
    await service?.stop();
    await proxy?.close();
  });

  it('stops at half a lease: RUN_ERROR SERVICE_UNAVAILABLE before the lease could lapse, whatever the driver waits for', async () => {
    const input = runInput('/tool pick_color {"hint":"warm"}', { tools: [PICK] });
    const live = await openRun(`${service.base}/run`, input);
    await live.waitFor((e) => e.type === 'TOOL_CALL_END');
    proxy.freeze();
    const frames = await endsWithin(live.done, 10_000);
    // When the service ended the run: its terminal event's timestamp, not when this process read it
    // (the runner's own lag under a loaded machine, 100 to 400 ms in CI, is not the service's).
    const endedAt = frames.at(-1)!.event.timestamp as number;
    // Before the lease could lapse: the last renewal the database took gave the run until
    // lease_expires_at (read beside the frozen proxy). The next renewal is asked a third of a lease
    // after it (1 s) and the run is stopped half a lease later without an answer (1.5 s), on time and
    // not at the next renewal tick: a sixth of the lease (500 ms) before it lapses, not after the
    // driver's 5 s connect timeout. Checked at ticks only, the stop came as the lease ended.
    const lease = await db((c) =>
      c.query<{ until: Date }>('SELECT lease_expires_at AS until FROM runs WHERE id = $1', [input.runId]),
    );
    expect(endedAt).toBeLessThan(lease.rows[0].until.getTime() - 250);
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({
      type: 'RUN_ERROR',
      code: 'SERVICE_UNAVAILABLE',
      message: 'The database is unavailable; retry later',
    });
    expect(frames.at(-1)!.unlogged).toBe(true);
  });
});
