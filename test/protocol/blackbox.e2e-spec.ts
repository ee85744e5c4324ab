import { FRONTEND_TOOL } from '@io-bridge/conformance';
import { clientFor, expectErrorEnvelope, kitId, runBody } from '../support/kit-client';
import { readRun } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';
import { BuiltService, startBuiltService } from '../support/built-service';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The program users run, as they run it: `node dist/src/main.js` (what `nest build` wrote) on a free port
 * and the e2e database, driven over HTTP only. Jest's own compilation of src/ plays no part here.
 */
describe('the built service (node dist/src/main.js), black-box over HTTP', () => {
  let service: BuiltService | undefined;
  beforeAll(async () => {
    service = await startBuiltService({ DATABASE_URL: process.env.E2E_DATABASE_URL! });
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
  });

  const onFailure = (title: string) =>
    process.stderr.write(
      `\n--- "${title}" failed; the service's output:\n${service?.output() ?? '(not started)'}\n---\n`,
    );
  const test = (title: string, fn: () => void | Promise<void>) =>
    it(title, async () => {
      try {
        await fn();
      } catch (err) {
        onFailure(title);
        throw err;
      }
    });
  const client = () => clientFor({ base: service!.base });

  describe('POST /threads without an id (the 500 that every jest-compiled test missed)', () => {
    for (const payload of ['{}', '{"title":"x"}', '{"metadata":{"a":1}}'])
      test(`answers ${payload} with 201 and a generated id`, async () => {
        const res = await client().request('/threads', { body: payload });
        const text = await res.text();
        expect({ status: res.status, body: text }).toMatchObject({ status: 201 });
        const thread = JSON.parse(text);
        expect(thread.id).toMatch(UUID);
        expect(thread).toMatchObject(JSON.parse(payload));
        expect((await client().json(`/threads/${thread.id}`)).body).toEqual(thread);
      });
  });

  describe('run routes beyond the seed', () => {
    test('GET /runs/:runId: a finished run in the Run shape; an unknown run → 404', async () => {
      const input = runBody('hello', undefined);
      const { frames } = await client().run(input);
      assertStreamRules(frames, input);
      const { status, body } = await client().json(`/runs/${input.runId}`);
      expect(status).toBe(200);
      expect(body).toEqual({
        id: input.runId,
        threadId: input.threadId,
        agentId: 'assistant',
        status: 'finished',
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        pendingToolCalls: [],
      });
      await expectErrorEnvelope(await client().request(`/runs/${kitId('none')}`), 404, 'NOT_FOUND');
    });

    test('GET /runs/:runId of a run waiting for a frontend tool: waiting_for_tool and its pending call', async () => {
      const input = runBody(`/tool ${FRONTEND_TOOL.name} {"query":"Paris"}`, undefined, {
        tools: [FRONTEND_TOOL],
      });
      const live = await client().openRun(input);
      const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
      // The run records its wait just after the stream shows TOOL_CALL_END.
      let view: any;
      for (let i = 0; i < 100 && view?.status !== 'waiting_for_tool'; i++) {
        if (i) await new Promise((r) => setTimeout(r, 20));
        view = (await client().json(`/runs/${input.runId}`)).body;
      }
      expect(view).toMatchObject({
        status: 'waiting_for_tool',
        pendingToolCalls: [{ toolCallId: end.toolCallId, toolName: FRONTEND_TOOL.name }],
      });
      expect((await client().postToolResult(input.runId, end.toolCallId, { content: 'Paris' })).status).toBe(
        202,
      );
      await live.done;
      expect((await client().json(`/runs/${input.runId}`)).body).toMatchObject({
        status: 'finished',
        pendingToolCalls: [],
      });
    });

    test('GET /runs/:runId/events: a joiner mid-run and a replay get the same bytes as the run; Last-Event-ID, 204, 404, 400', async () => {
      const input = runBody('/slow 40 one two three four five six', undefined);
      const live = await client().openRun(input);
      await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      const events = (query = '', headers: Record<string, string> = {}) =>
        client().request(`/runs/${encodeURIComponent(input.runId)}/events${query}`, { headers });
      const joined = await readRun(await events());
      const frames = await live.done;
      await joined.done;
      assertStreamRules(frames, input);
      expect(joined.raw()).toBe(live.raw());
      const replay = await readRun(await events('', { 'last-event-id': '2' }));
      await replay.done;
      expect(replay.frames.map((f) => f.id)).toEqual(frames.slice(2).map((f) => f.id));
      expect(live.raw().endsWith(replay.raw())).toBe(true);
      expect((await events('', { 'last-event-id': String(frames.length) })).status).toBe(204);
      await expectErrorEnvelope(await events('?after=x'), 400, 'VALIDATION_FAILED');
      await expectErrorEnvelope(await client().request(`/runs/${kitId('none')}/events`), 404, 'NOT_FOUND');
    });

    test('POST /runs/:runId/cancel → 202; the stream ends RUN_ERROR CANCELLED, the run is cancelled; again → 409', async () => {
      const input = runBody('/slow 100 one two three four five six seven eight nine ten', undefined);
      const live = await client().openRun(input);
      await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      const cancel = await client().json(`/runs/${input.runId}/cancel`, { method: 'POST' });
      expect(cancel).toMatchObject({ status: 202, body: { accepted: true } });
      const frames = await live.done;
      assertStreamRules(frames, input);
      expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
      expect((await client().json(`/runs/${input.runId}`)).body).toMatchObject({
        status: 'cancelled',
        error: { code: 'CANCELLED' },
      });
      await expectErrorEnvelope(
        await client().request(`/runs/${input.runId}/cancel`, { method: 'POST' }),
        409,
        'RUN_NOT_ACTIVE',
      );
      await expectErrorEnvelope(
        await client().request(`/runs/${kitId('none')}/cancel`, { method: 'POST' }),
        404,
        'NOT_FOUND',
      );
    });
  });

  describe('operations routes', () => {
    test('GET /health/live and /health/ready → 200', async () => {
      for (const path of ['/health/live', '/health/ready']) {
        const res = await fetch(`${service!.origin}${path}`);
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ status: 'ok' });
      }
      const ready = await (await fetch(`${service!.origin}/health/ready`)).json();
      expect(Object.keys(ready.info)).toEqual(expect.arrayContaining(['database', 'migrations', 'shutdown']));
    });

    test('GET /metrics → Prometheus text with the run and HTTP metrics', async () => {
      const res = await fetch(`${service!.origin}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      expect(text).toContain('# TYPE io_bridge_active_runs gauge');
      expect(text).toMatch(/^http_request_duration_seconds_count\{.*route="\/io-bridge\/run".*\} \d+$/m);
    });

    test('GET /docs-json → the OpenAPI document with every route', async () => {
      const res = await fetch(`${service!.origin}/docs-json`);
      expect(res.status).toBe(200);
      const doc = await res.json();
      expect(doc.openapi).toMatch(/^3\./);
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining([
          '/io-bridge/run',
          '/io-bridge/runs/{runId}/tool-calls/{toolCallId}/result',
          '/io-bridge/runs/{runId}/cancel',
          '/io-bridge/runs/{runId}',
          '/io-bridge/agents',
          '/io-bridge/agents/{agentId}',
          '/io-bridge/threads',
          '/io-bridge/threads/{threadId}',
          '/io-bridge/threads/{threadId}/messages',
          '/health/live',
          '/health/ready',
        ]),
      );
    });
  });

  // Last: everything above was served without an error log (a 5xx, an INTERNAL, a crash in a run).
  describe('the service log (LOG_LEVEL=warn)', () => {
    test('holds nothing at error level or above, and nothing but JSON lines, after all of the above', () => {
      const lines = service!.output().split('\n').filter(Boolean);
      const bad = lines.filter((line) => {
        try {
          return (JSON.parse(line) as { level?: number }).level! >= 50;
        } catch {
          return true;
        }
      });
      expect(bad).toEqual([]);
    });
  });
});
