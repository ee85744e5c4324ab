import { HttpAgent } from '@ag-ui/client';
import { Client } from 'pg';
import { EARLY_RESULTS_PER_RUN, ToolCallsRepository } from '../../src/runs/storage/tool-calls.repository';
import { db, eventually, insertLiveRun, startApp, TestApp } from '../support/app';
import { LiveRun, openRun, runInput, runToFrames, shownText, types, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const isEvent = (type: string, toolCallId?: string) => (e: Record<string, any>) =>
  e.type === type && (toolCallId === undefined || e.toolCallId === toolCallId);

function postResult(
  t: TestApp,
  runId: string,
  toolCallId: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${t.baseUrl}/io-bridge/runs/${runId}/tool-calls/${toolCallId}/result`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const getRun = (t: TestApp, runId: string, headers: Record<string, string> = {}) =>
  fetch(`${t.baseUrl}/io-bridge/runs/${runId}`, { headers });

const statusOf = (runId: string) =>
  db((c) =>
    c
      .query<{ status: string; error_code: string | null }>(
        'SELECT status, error_code FROM runs WHERE id = $1',
        [runId],
      )
      .then((r) => r.rows[0]),
  );

describe('tools in the run', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('runs a server tool in the backend: START/ARGS/END, RESULT from the backend, then the answer', async () => {
    const input = runInput('/tool calculate {"expression":"2+3*4"}');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const kinds = types(frames);
    expect(kinds.indexOf('TOOL_CALL_END')).toBeLessThan(kinds.indexOf('TOOL_CALL_RESULT'));
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(result.role).toBe('tool');
    expect(JSON.parse(result.content)).toEqual({ expression: '2+3*4', result: 14 });
    expect(shownText(frames)).toBe('Tool calculate returned {"expression":"2+3*4","result":14}');
    expect(kinds.filter((k) => k === 'STEP_STARTED')).toHaveLength(2);
  });

  it('reports a failing server tool to the model as a failed call, not a crash', async () => {
    const input = runInput('/tool current_time {"timeZone":"Mars/Olympus"}');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ error: "Unknown time zone 'Mars/Olympus'" });
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });

  it('runs a declared tool named like a server tool as the server tool, without waiting', async () => {
    const shadow = { name: 'calculate', description: 'frontend calculator', parameters: { type: 'object' } };
    const input = runInput('/tool calculate {"expression":"6*7"}', { tools: [shadow] });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ expression: '6*7', result: 42 });
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });

  it('is rebuilt by the official client: assistant with toolCalls, tool message, final answer', async () => {
    const agent = new HttpAgent({ url: t.runUrl, threadId: uid('thread') });
    agent.addMessage({
      id: uid('msg'),
      role: 'user',
      content: '/tool current_time {"timeZone":"Europe/Paris"}',
    });
    const { newMessages } = await agent.runAgent({ runId: uid('run') });
    const [call, tool, answer] = newMessages;
    expect(call).toMatchObject({ role: 'assistant', toolCalls: [{ function: { name: 'current_time' } }] });
    expect(JSON.parse((call as any).toolCalls[0].function.arguments)).toEqual({ timeZone: 'Europe/Paris' });
    expect(tool).toMatchObject({ role: 'tool', toolCallId: (call as any).toolCalls[0].id });
    expect(JSON.parse(tool.content as string).timeZone).toBe('Europe/Paris');
    expect(answer).toMatchObject({ role: 'assistant' });
    expect(answer.content).toMatch(/^Tool current_time returned /);
  });

  it('waits inside the same run for a frontend tool result posted after TOOL_CALL_END', async () => {
    const input = runInput('/tool get_city {"city":"Paris"}', { tools: [GET_CITY] });
    const run = await openRun(t.runUrl, input);
    const end = await run.waitFor(isEvent('TOOL_CALL_END'));
    const view = await eventually(async () => {
      const body = await (await getRun(t, input.runId)).json();
      return body.status === 'waiting_for_tool' ? body : undefined;
    });
    expect(view.pendingToolCalls).toEqual([{ toolCallId: end.toolCallId, toolName: 'get_city' }]);
    const res = await postResult(t, input.runId, end.toolCallId, { content: { city: 'Lyon' } });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: true });
    const frames = await run.done;
    assertStreamRules(frames, input);
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(result).toMatchObject({ toolCallId: end.toolCallId, content: '{"city":"Lyon"}', role: 'tool' });
    expect(shownText(frames)).toBe('Tool get_city returned {"city":"Lyon"}');
    expect(types(frames).filter((k) => k === 'RUN_STARTED')).toHaveLength(1);
    const after = await (await getRun(t, input.runId)).json();
    expect(after).toMatchObject({ status: 'finished', pendingToolCalls: [] });
  });

  it('works with the official client executing the frontend tool', async () => {
    const agent = new HttpAgent({ url: t.runUrl, threadId: uid('thread') });
    agent.addMessage({ id: uid('msg'), role: 'user', content: '/tool get_city {"city":"Nice"}' });
    const runId = uid('run');
    const posted: Promise<Response>[] = [];
    const { newMessages } = await agent.runAgent(
      { runId, tools: [GET_CITY] },
      {
        onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
          if (toolCallName === 'get_city') {
            posted.push(postResult(t, runId, event.toolCallId, { content: `city of ${toolCallArgs.city}` }));
          }
        },
      },
    );
    expect((await Promise.all(posted)).map((r) => r.status)).toEqual([202]);
    expect(newMessages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(newMessages[1].content).toBe('city of Nice');
    expect(newMessages[2].content).toBe('Tool get_city returned "city of Nice"');
  });

  it('handles a mixed turn: the server result is not held back by the pending frontend call', async () => {
    const input = runInput('/tool current_time {"timeZone":"UTC"}\n/tool get_city {"city":"Paris"}', {
      tools: [GET_CITY],
    });
    const run = await openRun(t.runUrl, input);
    const starts = new Map<string, string>();
    await run.waitFor((e) => {
      if (e.type === 'TOOL_CALL_START') starts.set(e.toolCallName, e.toolCallId);
      return starts.size === 2;
    });
    // The server tool's result streams while the frontend tool is still unanswered.
    await run.waitFor(isEvent('TOOL_CALL_RESULT', starts.get('current_time')));
    expect(
      run.frames.some(
        (f) => f.event.type === 'TOOL_CALL_RESULT' && f.event.toolCallId === starts.get('get_city'),
      ),
    ).toBe(false);
    await run.waitFor(isEvent('TOOL_CALL_END', starts.get('get_city')));
    expect((await postResult(t, input.runId, starts.get('get_city')!, { content: 'Lyon' })).status).toBe(202);
    const frames = await run.done;
    assertStreamRules(frames, input);
    const starts1 = frames
      .filter((f) => f.event.type === 'TOOL_CALL_START')
      .map((f) => f.event.parentMessageId);
    expect(new Set(starts1).size).toBe(1);
    expect(shownText(frames)).toMatch(
      /^Tool current_time returned \{.*"timeZone":"UTC".*\}\nTool get_city returned "Lyon"$/,
    );
  });

  it('keeps results posted at once for two frontend calls, before the run waits on them', async () => {
    const input = runInput('/tool get_city {"city":"a"}\n/tool get_city {"city":"b"}', { tools: [GET_CITY] });
    const run = await openRun(t.runUrl, input);
    const posts: Promise<Response>[] = [];
    const seen = new Set<string>();
    await run.waitFor((e) => {
      if (e.type === 'TOOL_CALL_END' && !seen.has(e.toolCallId)) {
        seen.add(e.toolCallId);
        posts.push(postResult(t, input.runId, e.toolCallId, { content: `r${seen.size}` }));
      }
      return seen.size === 2;
    });
    expect((await Promise.all(posts)).map((r) => r.status)).toEqual([202, 202]);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
    expect(frames.filter((f) => f.event.type === 'TOOL_CALL_RESULT')).toHaveLength(2);
  });

  it('reports frontend-tool arguments that do not match the declared schema as a failed call', async () => {
    const input = runInput('/tool get_city {"city":5}', { tools: [GET_CITY] });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(result.content).toMatch(/validation failed/i);
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
    expect((await (await getRun(t, input.runId)).json()).pendingToolCalls).toEqual([]);
  });

  it('reports {error} from the frontend to the model as a failed call', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(t.runUrl, input);
    const end = await run.waitFor(isEvent('TOOL_CALL_END'));
    expect((await postResult(t, input.runId, end.toolCallId, { error: 'user declined' })).status).toBe(202);
    const frames = await run.done;
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ error: 'user declined' });
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });

  describe('result posts', () => {
    it('duplicate → 409, unknown tool call → 404, unknown run → 404, another owner → 404, bad bodies → 400', async () => {
      const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
      const run = await openRun(t.runUrl, input);
      const { toolCallId } = await run.waitFor(isEvent('TOOL_CALL_END'));
      for (const body of ['[]', '"text"', '{}', '{"contnet":1}']) {
        const res = await postResult(t, input.runId, toolCallId, body);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
      }
      const stranger = await postResult(
        t,
        input.runId,
        toolCallId,
        { content: 1 },
        { 'x-resource-id': 'mallory' },
      );
      expect(stranger.status).toBe(404);
      expect(await stranger.json()).toMatchObject({ code: 'NOT_FOUND' });
      expect(await (await getRun(t, input.runId, { 'x-resource-id': 'mallory' })).json()).toMatchObject({
        code: 'NOT_FOUND',
      });
      // A call the run never registers is made up: 404 once the wait for its registration is over.
      const unknownCall = await postResult(t, input.runId, 'no-such-call', { content: 1 });
      expect(unknownCall.status).toBe(404);
      expect(await unknownCall.json()).toMatchObject({ code: 'NOT_FOUND' });
      expect((await postResult(t, input.runId, 'no-such-call', { content: 1 })).status).toBe(404);
      expect((await (await getRun(t, input.runId)).json()).pendingToolCalls).toEqual([
        { toolCallId, toolName: 'get_city' },
      ]);
      const leftovers = await db((c) =>
        c.query('SELECT 1 FROM run_tool_calls WHERE run_id = $1 AND tool_call_id = $2', [
          input.runId,
          'no-such-call',
        ]),
      );
      expect(leftovers.rows).toEqual([]);
      const unknownRun = await postResult(t, 'no-such-run', toolCallId, { content: 1 });
      expect(unknownRun.status).toBe(404);
      expect((await postResult(t, input.runId, toolCallId, { content: null })).status).toBe(202);
      const duplicate = await postResult(t, input.runId, toolCallId, { content: 2 });
      expect(duplicate.status).toBe(409);
      expect(await duplicate.json()).toMatchObject({ code: 'TOOL_RESULT_ALREADY_SUBMITTED' });
      await run.done;
      const late = await postResult(t, input.runId, toolCallId, { content: 3 });
      expect(late.status).toBe(409);
      expect(await late.json()).toMatchObject({ code: 'RUN_NOT_ACTIVE' });
      const lateUnknown = await postResult(t, input.runId, 'whatever', { content: 3 });
      expect(await lateUnknown.json()).toMatchObject({ code: 'RUN_NOT_ACTIVE' });
    });
  });

  it('cancels a run waiting on a frontend tool: RUN_ERROR CANCELLED after closing what is open', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(t.runUrl, input);
    await run.waitFor(isEvent('TOOL_CALL_END'));
    const res = await fetch(`${t.baseUrl}/io-bridge/runs/${input.runId}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    expect(await statusOf(input.runId)).toEqual({ status: 'cancelled', error_code: 'CANCELLED' });
    const again = await fetch(`${t.baseUrl}/io-bridge/runs/${input.runId}/cancel`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: 'RUN_NOT_ACTIVE' });
  });

  it('cancels a streaming model call', async () => {
    const input = runInput('/slow 200 a b c d e f g h i j k l m n o p');
    const run = await openRun(t.runUrl, input);
    await run.waitFor(isEvent('TEXT_MESSAGE_CONTENT'));
    expect(
      (await fetch(`${t.baseUrl}/io-bridge/runs/${input.runId}/cancel`, { method: 'POST' })).status,
    ).toBe(202);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(types(frames)).toContain('TEXT_MESSAGE_END');
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
  });
});

describe('frontend tool timeout', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ FRONTEND_TOOL_TIMEOUT_MS: '300', HEARTBEAT_MS: '50' });
  });
  afterAll(() => t.close());

  it('ends with RUN_ERROR TOOL_RESULT_TIMEOUT, pinging while it waits', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(t.runUrl, input);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'TOOL_RESULT_TIMEOUT' });
    expect(run.raw()).toContain(': ping\n\n');
    expect(await statusOf(input.runId)).toEqual({ status: 'error', error_code: 'TOOL_RESULT_TIMEOUT' });
  });
});

describe('two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApp(), startApp()]);
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it('delivers a result posted to the other instance to the run', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(a.runUrl, input);
    const { toolCallId } = await run.waitFor(isEvent('TOOL_CALL_END'));
    expect((await postResult(b, input.runId, toolCallId, { content: 'from B' })).status).toBe(202);
    const duplicate = await postResult(a, input.runId, toolCallId, { content: 'again' });
    expect(duplicate.status).toBe(409);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event.content).toBe('from B');
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });

  it('cancels through the other instance', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(a.runUrl, input);
    await run.waitFor(isEvent('TOOL_CALL_END'));
    expect(
      (await fetch(`${b.baseUrl}/io-bridge/runs/${input.runId}/cancel`, { method: 'POST' })).status,
    ).toBe(202);
    const frames = await run.done;
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
  });
});

describe('a frontend tool result posted before its call is registered', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Lost results surface as timeouts: short, so a regression fails fast instead of hanging.
    const env = { RATE_LIMIT_PER_MINUTE: '100000', FRONTEND_TOOL_TIMEOUT_MS: '3000' };
    // A's small pool queues its runs' registrations behind their other queries, as a busy pool does. Two
    // connections, not one: TOOL_CALL_START is stored before it is sent, and a held registration on
    // the only connection would keep it from ever reaching the test.
    a = await startApp({ ...env, DATABASE_POOL_SIZE: '2' });
    b = await startApp(env);
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  // Registrations of runs named `held-…` wait in a trigger while the test holds HOLD_KEY.
  const HOLD_KEY = 4242;
  beforeAll(() =>
    db(async (c) => {
      await c.query(`CREATE FUNCTION test_hold_registration() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.status = 'pending' AND NEW.run_id LIKE 'held-%' THEN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); END IF;
          RETURN NEW;
        END $$`);
      await c.query(`CREATE TRIGGER test_hold_registration BEFORE INSERT ON run_tool_calls
        FOR EACH ROW EXECUTE FUNCTION test_hold_registration()`);
    }),
  );
  afterAll(() =>
    db(async (c) => {
      await c.query('DROP TRIGGER test_hold_registration ON run_tool_calls');
      await c.query('DROP FUNCTION test_hold_registration()');
    }),
  );

  /** Holds every `held-…` registration until `release`; resolves once one is actually waiting. */
  async function holdRegistrations(): Promise<{
    waiting: () => Promise<void>;
    release: () => Promise<void>;
  }> {
    const client = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await client.connect();
    await client.query('SELECT pg_advisory_lock($1)', [HOLD_KEY]);
    return {
      waiting: () =>
        eventually(async () => {
          const { rows } = await client.query(
            `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
            [HOLD_KEY],
          );
          return rows.length ? true : undefined;
        }).then(() => undefined),
      release: async () => {
        await client.query('SELECT pg_advisory_unlock($1)', [HOLD_KEY]).catch(() => undefined);
        await client.end();
      },
    };
  }

  async function postWhileRegistrationHeld(holder: TestApp, poster: TestApp) {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY], runId: uid('held') });
    const hold = await holdRegistrations();
    let run: LiveRun;
    let toolCallId: string;
    let first: Promise<Response> | undefined;
    try {
      run = await openRun(holder.runUrl, input);
      ({ toolCallId } = await run.waitFor(isEvent('TOOL_CALL_START')));
      await hold.waiting();
      const known = await db((c) =>
        c.query('SELECT 1 FROM run_tool_calls WHERE run_id = $1 AND status <> $2', [input.runId, 'early']),
      );
      expect(known.rows).toEqual([]);
      // The first post is kept at once (the waiting run may take it first) and answers once the call is known.
      first = postResult(poster, input.runId, toolCallId, { content: 'early' });
      await eventually(async () => {
        const { rows } = await db((c) =>
          c.query('SELECT 1 FROM run_tool_calls WHERE run_id = $1', [input.runId]),
        );
        return rows.length ? true : undefined;
      });
      const duplicate = await postResult(poster, input.runId, toolCallId, { content: 'again' });
      expect(duplicate.status).toBe(409);
      expect(await duplicate.json()).toMatchObject({ code: 'TOOL_RESULT_ALREADY_SUBMITTED' });
      expect(types(run.frames)).not.toContain('TOOL_CALL_END');
    } finally {
      await hold.release();
    }
    expect((await first).status).toBe(202);
    const frames = await run.done;
    assertStreamRules(frames, input);
    const results = frames.filter((f) => f.event.type === 'TOOL_CALL_RESULT');
    expect(results.map((f) => f.event)).toMatchObject([{ toolCallId, content: 'early' }]);
    expect(shownText(frames)).toBe('Tool get_city returned "early"');
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
    const late = await postResult(poster, input.runId, toolCallId, { content: 'late' });
    expect(await late.json()).toMatchObject({ code: 'RUN_NOT_ACTIVE' });
  }

  it('keeps a result posted while the registration is held, delivers it once; a second post → 409', () =>
    postWhileRegistrationHeld(b, b));

  it('keeps a result posted to instance B before instance A registered the call', () =>
    postWhileRegistrationHeld(a, b));

  it('answers made-up calls of a live run 404 after the wait, keeps nothing, still takes the real result', async () => {
    const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
    const run = await openRun(b.runUrl, input);
    const { toolCallId } = await run.waitFor(isEvent('TOOL_CALL_END'));
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        postResult(b, input.runId, `made-up-${i}`, { content: i }).then((r) => r.status),
      ),
    );
    expect(statuses).toEqual(Array<number>(10).fill(404));
    expect((await postResult(b, input.runId, toolCallId, { content: 'real' })).status).toBe(202);
    const frames = await run.done;
    expect(shownText(frames)).toBe('Tool get_city returned "real"');
    const left = await db((c) =>
      c.query('SELECT count(*)::int AS n FROM run_tool_calls WHERE run_id = $1 AND status <> $2', [
        input.runId,
        'done',
      ]),
    );
    expect(left.rows[0].n).toBe(0);
    const madeUp = await db((c) =>
      c.query(
        `SELECT count(*)::int AS n FROM run_tool_calls WHERE run_id = $1 AND tool_call_id LIKE 'made-up-%'`,
        [input.runId],
      ),
    );
    expect(madeUp.rows[0].n).toBe(0);
  });

  describe('ToolCallsRepository on the real database', () => {
    const owner = 'repo-owner';
    let repo: ToolCallsRepository;
    const liveRun = () => insertLiveRun(owner);
    const row = (runId: string) =>
      db((c) =>
        c
          .query<{ status: string; tool_name: string | null; run_status: string }>(
            `SELECT c.status, c.tool_name, r.status AS run_status
               FROM run_tool_calls c JOIN runs r ON r.id = c.run_id WHERE c.run_id = $1`,
            [runId],
          )
          .then((r) => r.rows),
      );
    beforeAll(() => {
      repo = a.app.get(ToolCallsRepository);
    });

    it('result first: registration claims it without waiting, take returns it once, then 409', async () => {
      const runId = await liveRun();
      await repo.submit(runId, owner, 'c1', { content: { v: 1 } });
      expect(await row(runId)).toEqual([{ status: 'early', tool_name: null, run_status: 'running' }]);
      await repo.register(runId, owner, 'c1', 'get_city');
      expect(await row(runId)).toEqual([
        { status: 'submitted', tool_name: 'get_city', run_status: 'running' },
      ]);
      await expect(repo.submit(runId, owner, 'c1', { content: 2 })).rejects.toMatchObject({
        code: 'TOOL_RESULT_ALREADY_SUBMITTED',
      });
      expect(await repo.take(runId, owner, 'c1')).toEqual({ content: { v: 1 } });
      expect(await repo.take(runId, owner, 'c1')).toBeUndefined();
    });

    it('result first, wait before registration: take returns it, the late registration changes nothing', async () => {
      const runId = await liveRun();
      await repo.submit(runId, owner, 'c1', { error: 'declined' });
      expect(await repo.take(runId, owner, 'c1')).toEqual({ error: 'declined' });
      await repo.register(runId, owner, 'c1', 'get_city');
      expect(await row(runId)).toEqual([{ status: 'done', tool_name: null, run_status: 'running' }]);
      expect(await repo.pending(runId, owner)).toEqual([]);
    });

    it(`keeps at most ${EARLY_RESULTS_PER_RUN} unclaimed early results per run: 404 past them`, async () => {
      const runId = await liveRun();
      for (let i = 0; i < EARLY_RESULTS_PER_RUN; i++) {
        expect(await repo.submit(runId, owner, `early-${i}`, { content: i })).toBe('early');
      }
      await expect(repo.submit(runId, owner, 'one-too-many', { content: 0 })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      await repo.register(runId, owner, 'registered', 'get_city');
      expect(await repo.submit(runId, owner, 'registered', { content: 1 })).toBe('submitted');
    });

    it('registration: early until the run registers the call; a result never registered is withdrawn', async () => {
      const runId = await liveRun();
      await repo.submit(runId, owner, 'soon', { content: 1 });
      expect(await repo.registration(runId, owner, 'soon')).toBe('early');
      await repo.register(runId, owner, 'soon', 'get_city');
      expect(await repo.registration(runId, owner, 'soon')).toBe('registered');
      expect(await repo.withdrawEarly(runId, owner, 'soon')).toBe(false);
      await repo.submit(runId, owner, 'never', { content: 1 });
      expect(await repo.withdrawEarly(runId, owner, 'never')).toBe(true);
      expect(await repo.registration(runId, owner, 'never')).toBe('none');
      expect((await row(runId)).map((r) => r.status)).toEqual(['submitted']);
    });

    it('registration first: the run waits, the result completes the row', async () => {
      const runId = await liveRun();
      await repo.register(runId, owner, 'c1', 'get_city');
      expect(await row(runId)).toEqual([
        { status: 'pending', tool_name: 'get_city', run_status: 'waiting_for_tool' },
      ]);
      expect(await repo.take(runId, owner, 'c1')).toBeUndefined();
      await repo.submit(runId, owner, 'c1', { content: 'x' });
      expect(await repo.take(runId, owner, 'c1')).toEqual({ content: 'x' });
      expect(await row(runId)).toEqual([{ status: 'done', tool_name: 'get_city', run_status: 'running' }]);
    });

    it("another owner's calls: 404 on submit, nothing registered, nothing taken or listed", async () => {
      const runId = await liveRun();
      await expect(repo.submit(runId, 'mallory', 'c1', { content: 1 })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      await repo.register(runId, 'mallory', 'c1', 'get_city');
      expect(await row(runId)).toEqual([]);
      await repo.register(runId, owner, 'c1', 'get_city');
      await repo.submit(runId, owner, 'c1', { content: 1 });
      expect(await repo.pending(runId, 'mallory')).toEqual([]);
      expect(await repo.take(runId, 'mallory', 'c1')).toBeUndefined();
      expect(await repo.take(runId, owner, 'c1')).toEqual({ content: 1 });
    });
  });

  it('accepts a result posted on TOOL_CALL_START and delivers it exactly once, 200 times', async () => {
    const runs = 200;
    const statuses: Record<string, number> = {};
    const failures: string[] = [];
    const one = async (i: number) => {
      const input = runInput(`/tool get_city {"city":"c${i}"}`, { tools: [GET_CITY] });
      const run = await openRun(a.runUrl, input);
      const { toolCallId } = await run.waitFor(isEvent('TOOL_CALL_START'));
      // Every other result goes to the other instance, which reaches the run through Postgres.
      const res = await postResult(i % 2 ? b : a, input.runId, toolCallId, { content: `r${i}` });
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      const frames = await run.done;
      const results = frames.filter((f) => f.event.type === 'TOOL_CALL_RESULT');
      const last = frames.at(-1)?.event.type;
      if (
        results.length !== 1 ||
        results[0].event.content !== `r${i}` ||
        shownText(frames) !== `Tool get_city returned "r${i}"` ||
        last !== 'RUN_FINISHED'
      ) {
        failures.push(`${i}: ${res.status}, ${results.length} results, ends ${last}`);
      }
    };
    let next = 0;
    const worker = async () => {
      while (next < runs) await one(next++);
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect({ statuses, failures: failures.length, examples: failures.slice(0, 5) }).toEqual({
      statuses: { 202: runs },
      failures: 0,
      examples: [],
    });
  }, 120_000);
});
