import { startApp, TestApp } from '../support/app';
import { openRun, postRun, runInput, runToFrames, shownText, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const OWNER = 'josé.martín@corp.example';
const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * Lenient where AG-UI and the Mastra reference are (docs/protocol.md#the-run-request); strict where it
 * matters.
 */
describe('lenient input', () => {
  let t: TestApp;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${t.baseUrl}/io-bridge${path}`, {
      ...init,
      headers: {
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(init.headers as Record<string, string>),
      },
    });
  const asOwner = { 'x-resource-id': encodeURIComponent(OWNER) };

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  describe('ids and owners are Unicode text', () => {
    it('an SSO username works as owner and in thread, run and message ids, in bodies, queries, paths and X-Resource-Id', async () => {
      const threadId = `${OWNER}/Fil de discussion ${uid('é')}`;
      const runId = `exécution ${uid('ü')}`;
      const messageId = `message 田中 ${uid('m')}`;

      const created = await api('/threads', {
        method: 'POST',
        headers: asOwner,
        body: JSON.stringify({ id: threadId, title: 'Équipe' }),
      });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ id: threadId, resourceId: OWNER });

      const input = runInput('bonjour', {
        threadId,
        runId,
        messages: [{ id: messageId, role: 'user', content: 'bonjour' }],
        forwardedProps: { resourceId: OWNER },
      });
      const { res, frames } = await runToFrames(t.runUrl, input);
      expect(res.status).toBe(200);
      assertStreamRules(frames, input);
      expect(frames[0].event).toMatchObject({ type: 'RUN_STARTED', threadId, runId });
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');

      const list = await api(`/threads?resourceId=${encodeURIComponent(OWNER)}`);
      expect(list.status).toBe(200);
      expect((await list.json()).threads).toEqual([
        expect.objectContaining({ id: threadId, resourceId: OWNER }),
      ]);

      const path = `/threads/${encodeURIComponent(threadId)}`;
      const messages = await api(`${path}/messages?format=agui`, { headers: asOwner });
      expect(messages.status).toBe(200);
      expect((await messages.json()).messages).toEqual([
        expect.objectContaining({ id: messageId, role: 'user', content: 'bonjour' }),
        expect.objectContaining({ role: 'assistant', content: 'You said: bonjour' }),
      ]);
      expect((await api(path, { headers: asOwner })).status).toBe(200);

      const run = await api(`/runs/${encodeURIComponent(runId)}`, { headers: asOwner });
      expect(run.status).toBe(200);
      expect(await run.json()).toMatchObject({ id: runId, threadId, status: 'finished' });

      // The same name without accents is another owner: it sees nothing.
      const other = { 'x-resource-id': 'jose.martin@corp.example' };
      expect((await api(`/runs/${encodeURIComponent(runId)}`, { headers: other })).status).toBe(404);
      expect((await api(path, { headers: other })).status).toBe(404);
    });

    const refused: Array<[string, Record<string, unknown>]> = [
      ['a threadId with \\u0001', { threadId: 'a\u0001b' }],
      ['a runId with a line feed', { runId: 'run\nforged log line' }],
      ['a message id of 201 characters', { messages: [{ id: 'é'.repeat(201), role: 'user', content: 'x' }] }],
      ['a threadId of only whitespace', { threadId: ' \u3000 ' }],
      ['a forwardedProps.resourceId with \\u0085', { forwardedProps: { resourceId: 'a\u0085b' } }],
    ];
    it.each(refused)('POST /run with %s is 400 VALIDATION_FAILED', async (_, extra) => {
      const res = await postRun(t.runUrl, runInput('x', extra));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    });

    it.each([
      ['a thread id with a tab', { id: 'a\tb' }, {}],
      ['a thread id of 201 characters', { id: 't'.repeat(201) }, {}],
      ['an X-Resource-Id with %01', {}, { 'x-resource-id': 'a%01b' }],
      ['an X-Resource-Id that is not percent-encoding', {}, { 'x-resource-id': '100%' }],
    ])('POST /threads with %s is 400 VALIDATION_FAILED', async (_, body, headers) => {
      const res = await api('/threads', { method: 'POST', headers, body: JSON.stringify(body) });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    });
  });

  describe('forwardedProps.structuredOutput', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

    it.each([[{}], [{ schema: null }]])(
      '%j runs normally, without structured output',
      async (structuredOutput) => {
        const input = runInput('hello there', { forwardedProps: { structuredOutput } });
        const { res, frames } = await runToFrames(t.runUrl, input);
        expect(res.status).toBe(200);
        assertStreamRules(frames, input);
        expect(shownText(frames)).toBe('You said: hello there');
        const end = frames.at(-1)!.event;
        expect(end.type).toBe('RUN_FINISHED');
        expect(end).not.toHaveProperty('result');
      },
    );

    it('a schema sent as JSON text is parsed and enforced', async () => {
      const text = JSON.stringify(schema);
      const good = runInput('/json {"city":"Lyon"}', {
        forwardedProps: { structuredOutput: { schema: text } },
      });
      const ok = await runToFrames(t.runUrl, good);
      assertStreamRules(ok.frames, good);
      expect(ok.frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', result: { city: 'Lyon' } });

      const bad = runInput('/json {"town":"Lyon"}', {
        forwardedProps: { structuredOutput: { schema: text } },
      });
      const ko = await runToFrames(t.runUrl, bad);
      assertStreamRules(ko.frames, bad);
      expect(ko.frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'STRUCTURED_OUTPUT_INVALID' });
    });

    it('a schema string that is not JSON is 400 naming the path', async () => {
      const res = await postRun(
        t.runUrl,
        runInput('x', { forwardedProps: { structuredOutput: { schema: '{"type":"object"' } } }),
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.structuredOutput.schema' }],
      });
    });
  });

  describe('a tool result body', () => {
    const resultOf = async (body: unknown) => {
      const input = runInput('/tool get_city {"city":"x"}', { tools: [GET_CITY] });
      const run = await openRun(t.runUrl, input);
      const end = await run.waitFor((e) => e.type === 'TOOL_CALL_END');
      const res = await api(`/runs/${input.runId}/tool-calls/${end.toolCallId}/result`, {
        method: 'POST',
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(202);
      const frames = await run.done;
      assertStreamRules(frames, input);
      return frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    };

    it('{result: 42} is delivered as content 42', async () => {
      expect(await resultOf({ result: 42 })).toMatchObject({ content: '42', role: 'tool' });
    });

    it('with both content and result, content wins', async () => {
      expect(await resultOf({ content: 'from content', result: 'from result' })).toMatchObject({
        content: 'from content',
      });
    });
  });

  it('unknown fields never cause a 400, at any level of any body or query', async () => {
    const threadId = uid('thread');
    const callId = uid('c0');
    const created = await api('/threads', {
      method: 'POST',
      body: JSON.stringify({ id: threadId, title: 't', somethingNew: { deep: [1] } }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).not.toHaveProperty('somethingNew');

    const patched = await api(`/threads/${threadId}`, {
      method: 'PATCH',
      body: JSON.stringify({ title: 'renamed', color: 'blue' }),
    });
    expect(patched.status).toBe(200);
    expect((await api(`/threads?limit=10&sort=desc&page=2`)).status).toBe(200);
    expect((await api(`/threads/${threadId}/messages?format=ui&include=all`)).status).toBe(200);

    const input = runInput('/tool get_city {"city":"x"}', {
      threadId,
      clientVersion: '9.9',
      messages: [
        { id: uid('m0'), role: 'system', content: 'Be brief', createdAt: '2024-01-01', flags: {} },
        {
          id: uid('m1'),
          role: 'assistant',
          content: 'ok',
          annotations: [],
          toolCalls: [
            {
              id: callId,
              type: 'function',
              index: 0,
              function: { name: 'get_city', arguments: '{}', strict: true },
            },
          ],
        },
        { id: uid('m2'), role: 'tool', toolCallId: callId, content: '{}', isError: false },
        { id: uid('m3'), role: 'user', content: '/tool get_city {"city":"x"}', parts: [] },
      ],
      tools: [{ ...GET_CITY, enabled: true, source: { mcpName: 'browser' } }],
      context: [{ description: 'locale', value: 'fr-FR', priority: 1 }],
      forwardedProps: { theme: 'dark' },
    });
    const run = await openRun(t.runUrl, input);
    const end = await run.waitFor((e) => e.type === 'TOOL_CALL_END');
    const res = await api(`/runs/${input.runId}/tool-calls/${end.toolCallId}/result`, {
      method: 'POST',
      body: JSON.stringify({ content: { city: 'Lyon' }, meta: { ms: 3 } }),
    });
    expect(res.status).toBe(202);
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
  });
});
