import { HttpAgent } from '@ag-ui/client';
import { db, eventually, startApp, TestApp } from './support/app';
import { openRun, runInput, runToFrames, shownText, types, uid } from './support/sse';
import { assertStreamRules } from './support/stream-rules';

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
      const unknownCall = await postResult(t, input.runId, 'no-such-call', { content: 1 });
      expect(unknownCall.status).toBe(404);
      expect(await unknownCall.json()).toMatchObject({ code: 'NOT_FOUND' });
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
