import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { db, eventually, startApp, TestApp } from '../support/app';
import { startBuiltService } from '../support/built-service';
import { dbProxy, DbProxy } from '../support/db-proxy';
import { openRun, parseFrames, postRun, runInput, runToFrames } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

describe('health, readiness and metrics', () => {
  let proxy: DbProxy;
  let t: TestApp;
  beforeAll(async () => {
    proxy = await dbProxy(new URL(process.env.E2E_DATABASE_URL!));
    t = await startApp({ DATABASE_URL: proxy.url, RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await t.close();
    await proxy.close();
  });

  it('is live, and ready while the database answers; red when it is down, green when it returns', async () => {
    const live = await fetch(`${t.baseUrl}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toMatchObject({ status: 'ok' });
    const ready = await fetch(`${t.baseUrl}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      info: { shutdown: { status: 'up' }, database: { status: 'up' }, migrations: { status: 'up' } },
    });

    await proxy.stop();
    const down = await fetch(`${t.baseUrl}/health/ready`);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({
      statusCode: 503,
      code: 'SERVICE_UNAVAILABLE',
      details: expect.arrayContaining([expect.objectContaining({ path: 'database' })]),
    });
    expect((await fetch(`${t.baseUrl}/health/live`)).status).toBe(200);

    await proxy.resume();
    await eventually(
      async () => ((await fetch(`${t.baseUrl}/health/ready`)).status === 200 ? true : undefined),
      10_000,
    );
  });

  it('counts runs, their outcomes and HTTP requests in /metrics', async () => {
    const scrape = async () => (await fetch(`${t.baseUrl}/metrics`)).text();
    const value = (text: string, line: string) =>
      Number(new RegExp(`^${line} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    const before = await scrape();
    await runToFrames(t.runUrl, runInput('hi', { forwardedProps: { resourceId: 'metrics-a' } }));
    await runToFrames(t.runUrl, runInput('/error boom', { forwardedProps: { resourceId: 'metrics-b' } }));
    const after = await scrape();
    expect(after).toContain('# TYPE io_bridge_active_runs gauge');
    expect(value(after, 'io_bridge_run_outcomes_total\\{status="finished",code="none"\\}')).toBe(
      value(before, 'io_bridge_run_outcomes_total\\{status="finished",code="none"\\}') + 1,
    );
    expect(value(after, 'io_bridge_run_outcomes_total\\{status="error",code="MODEL_ERROR"\\}')).toBe(
      value(before, 'io_bridge_run_outcomes_total\\{status="error",code="MODEL_ERROR"\\}') + 1,
    );
    expect(value(after, 'io_bridge_time_to_first_event_seconds_count')).toBe(
      value(before, 'io_bridge_time_to_first_event_seconds_count') + 2,
    );
    expect(value(after, 'io_bridge_active_runs')).toBe(0);
    expect(after).toMatch(/^io_bridge_db_pool_connections\{state="active"\} \d+$/m);
    expect(after).toMatch(/^io_bridge_db_pool_connections\{state="idle"\} \d+$/m);
    expect(after).not.toMatch(/state="total"/);
    expect(after).toMatch(
      /^http_request_duration_seconds_count\{method="GET",route="\/metrics",status="200"\} \d+$/m,
    );
    expect(after).toContain('io_bridge_frontend_tool_wait_seconds_bucket');
    expect(after).toContain('io_bridge_tool_result_timeouts_total');
  });

  it('counts a run once in http_request_duration_seconds, and its duration by status and agent', async () => {
    const scrape = async () => (await fetch(`${t.baseUrl}/metrics`)).text();
    const value = (text: string, line: string) =>
      Number(new RegExp(`^${line} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    const http = 'http_request_duration_seconds_count\\{method="POST",route="/io-bridge/run",status="200"\\}';
    const run = 'io_bridge_run_duration_seconds_count\\{agent="calculator",status="finished"\\}';
    const before = await scrape();
    const input = runInput('hi', { forwardedProps: { resourceId: 'metrics-once', agentId: 'calculator' } });
    expect((await runToFrames(t.runUrl, input)).res.status).toBe(200);
    // Both observations (the stream's close, Fastify's onResponse) come once the socket closes: wait for the run's.
    const after = await eventually(async () => {
      const text = await scrape();
      return value(text, run) > value(before, run) && value(text, http) > value(before, http)
        ? text
        : undefined;
    });
    expect(value(after, http)).toBe(value(before, http) + 1);
    expect(value(after, run)).toBe(value(before, run) + 1);
    expect(after).toContain('# TYPE io_bridge_run_duration_seconds histogram');
  });

  it('limits runs per owner per minute: 429 RATE_LIMITED, other owners unaffected', async () => {
    const as = (owner: string) => runInput('hi', { forwardedProps: { resourceId: owner } });
    for (let i = 0; i < 3; i++) expect((await runToFrames(t.runUrl, as('busy-owner'))).res.status).toBe(200);
    const limited = await postRun(t.runUrl, as('busy-owner'));
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED' });
    expect((await runToFrames(t.runUrl, as('calm-owner'))).res.status).toBe(200);
  });

  it('sends security headers and no CORS allowance to an unlisted origin', async () => {
    const res = await fetch(`${t.baseUrl}/health/live`, { headers: { origin: 'https://evil.example' } });
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("sends helmet's headers, once each, on a JSON answer, an error and a run's SSE stream", async () => {
    const stream = (
      await runToFrames(t.runUrl, runInput('hi', { forwardedProps: { resourceId: 'headers' } }))
    ).res;
    const error = await fetch(`${t.baseUrl}/io-bridge/nope`);
    const json = await fetch(`${t.baseUrl}/health/ready`);
    expect([stream.status, error.status, json.status]).toEqual([200, 404, 200]);
    for (const res of [stream, error, json]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // Equal, not containing: a header set twice would arrive joined with ', '.
      expect(res.headers.get('content-security-policy')).toBe(
        "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';" +
          "frame-ancestors 'self';img-src 'self' data:;object-src 'none';script-src 'self';" +
          "script-src-attr 'none';style-src 'self' 'unsafe-inline';connect-src 'self'",
      );
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('strict-transport-security')).toMatch(/^max-age=\d+/);
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
  });
});

describe('CORS allow-list', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ CORS_ORIGINS: 'https://app.example' });
  });
  afterAll(() => t.close());

  it('allows a listed origin, on the stream too', async () => {
    const input = runInput('hi');
    const res = await postRun(t.runUrl, input, {
      headers: { 'content-type': 'application/json', origin: 'https://app.example' },
    });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example');
    await res.text();
    const other = await fetch(`${t.baseUrl}/io-bridge/agents`, {
      headers: { origin: 'https://other.example' },
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('graceful shutdown', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('on SIGTERM: not ready, refuses new runs, hands a run still going over (its stream ends RUN_MOVED without an id), exits 0; the next replica finishes it', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [join(__dirname, '..', '..', 'dist', 'src', 'main.js')], {
      env: {
        ...process.env,
        DATABASE_URL: process.env.E2E_DATABASE_URL,
        PORT: String(port),
        LOG_LEVEL: 'error',
        SHUTDOWN_GRACE_MS: '1500',
      },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    await eventually(
      () =>
        fetch(`${base}/health/ready`).then(
          (r) => (r.ok ? true : undefined),
          () => undefined,
        ),
      20_000,
    );

    const input = runInput('/slow 300 one two three four five six seven eight nine ten eleven twelve');
    const live = await openRun(`${base}/io-bridge/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    child.kill('SIGTERM');

    await eventually(
      () => fetch(`${base}/health/ready`).then((r) => (r.status === 503 ? true : undefined)),
      5000,
    );
    const refused = await postRun(`${base}/io-bridge/run`, runInput('hi'));
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: 'SHUTTING_DOWN' });

    // No other replica takes it: relayed for SHUTDOWN_GRACE_MS, then RUN_MOVED, for this connection only.
    const frames = await live.done;
    expect(frames.at(-1)).toMatchObject({ unlogged: true, event: { type: 'RUN_ERROR', code: 'RUN_MOVED' } });
    expect(frames.filter((f) => f.unlogged)).toHaveLength(1);
    expect(await exited).toBe(0);
    const row = await db((c) =>
      c.query('SELECT status, handovers, lease_expires_at < now() AS lapsed FROM runs WHERE id = $1', [
        input.runId,
      ]),
    );
    expect(row.rows[0]).toEqual({ status: 'running', handovers: 1, lapsed: true });

    // The next replica (a restart) continues it at start-up; the client rejoins after its last id.
    const next = await startBuiltService({ LOG_LEVEL: 'error' });
    try {
      const last = frames.filter((f) => !f.unlogged).at(-1)!.id;
      const res = await fetch(`${next.base}/runs/${input.runId}/events`, {
        headers: { accept: 'text/event-stream', 'last-event-id': String(last) },
      });
      const rest = parseFrames(await res.text()).frames;
      assertStreamRules([...frames.filter((f) => !f.unlogged), ...rest], input);
      expect(rest.at(-1)!.event.type).toBe('RUN_FINISHED');
    } finally {
      next.kill();
    }
  });
});

describe('request and start-up logs (the built service at LOG_LEVEL=log)', () => {
  it('skips probes, logs a 404 as one line without a stack, names the run on its completion line, no route map', async () => {
    const service = await startBuiltService({ LOG_LEVEL: 'log' });
    const input = runInput('hi', { forwardedProps: { resourceId: 'log-owner' } });
    try {
      expect((await fetch(`${service.origin}/health/live`)).status).toBe(200);
      expect((await fetch(`${service.origin}/metrics`)).status).toBe(200);
      expect((await fetch(`${service.base}/no-such-route`)).status).toBe(404);
      expect((await runToFrames(`${service.base}/run`, input)).res.status).toBe(200);
    } finally {
      // Exited: every line is written.
      await service.stop();
    }
    const lines = service
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);
    const about = (path: string) => lines.filter((l) => l.req?.path === path);
    expect(about('/health/live')).toEqual([]);
    expect(about('/health/ready')).toEqual([]);
    expect(about('/metrics')).toEqual([]);
    const notFound = about('/io-bridge/no-such-route');
    expect(notFound).toHaveLength(1);
    expect(notFound[0]).toMatchObject({ level: 40, res: { statusCode: 404 } });
    expect(JSON.stringify(notFound[0])).not.toContain('stack');
    const completed = about('/io-bridge/run');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({
      runId: input.runId,
      threadId: input.threadId,
      res: { statusCode: 200 },
    });
    expect(lines.filter((l) => String(l.msg).startsWith('Mapped {'))).toEqual([]);
    expect(lines.some((l) => /^io-bridge \S+ listening on /.test(String(l.msg)))).toBe(true);
  });
});
