import { HttpAgent } from '@ag-ui/client';
import { assertStreamRules } from '../support/stream-rules';
import { endedRunRow, runRow, startApp, TestApp } from '../support/app';
import {
  parseFrames,
  postRun,
  postRunUntilText,
  runInput,
  runToFrames,
  shownText,
  types,
  uid,
} from '../support/sse';

describe('POST /io-bridge/run', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('streams a plain run: framing, headers, lifecycle and the scripted answer in several deltas', async () => {
    const input = runInput('hi');
    const { res, raw, frames } = await runToFrames(t.runUrl, input);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(raw).not.toMatch(/^event:/m);
    expect(raw.startsWith('id: 1\ndata: {"type":"RUN_STARTED"')).toBe(true);
    assertStreamRules(frames, input);
    const kinds = types(frames);
    expect(kinds[0]).toBe('RUN_STARTED');
    expect(kinds.at(-1)).toBe('RUN_FINISHED');
    const deltas = frames.filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT').map((f) => f.event.delta);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('You said: hi');
    expect(kinds.filter((k) => k === 'TEXT_MESSAGE_START')).toHaveLength(1);
    expect(await runRow(input.runId)).toMatchObject({ status: 'finished', error_code: null });
  });

  it('is accepted by the official @ag-ui/client, which rebuilds the assistant message', async () => {
    const agent = new HttpAgent({ url: t.runUrl, threadId: uid('thread') });
    agent.addMessage({ id: uid('msg'), role: 'user', content: 'hello there' });
    const errors: unknown[] = [];
    const { newMessages } = await agent.runAgent(
      { runId: uid('run') },
      { onRunErrorEvent: (e) => void errors.push(e) },
    );
    expect(errors).toEqual([]);
    const assistant = newMessages.filter((m) => m.role === 'assistant');
    expect(assistant).toHaveLength(1);
    expect(assistant[0].content).toBe('You said: hello there');
  });

  it('turns a model error into RUN_ERROR MODEL_ERROR after closing the open message, and records it', async () => {
    const input = runInput('/error boom');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const kinds = types(frames);
    expect(kinds.at(-1)).toBe('RUN_ERROR');
    expect(kinds.indexOf('TEXT_MESSAGE_CONTENT')).toBeLessThan(kinds.indexOf('TEXT_MESSAGE_END'));
    expect(kinds.indexOf('TEXT_MESSAGE_END')).toBeLessThan(kinds.indexOf('RUN_ERROR'));
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_ERROR', message: 'boom' });
    expect(await runRow(input.runId)).toMatchObject({ status: 'error', error_code: 'MODEL_ERROR' });
  });

  it('streams reasoning before the answer and closes it', async () => {
    const input = runInput('/reason deep thought');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const kinds = types(frames);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'REASONING_START',
        'REASONING_MESSAGE_CONTENT',
        'REASONING_MESSAGE_END',
        'REASONING_END',
      ]),
    );
    expect(kinds.indexOf('REASONING_END')).toBeLessThan(kinds.indexOf('TEXT_MESSAGE_START'));
  });

  it('answers /json with exactly that JSON text', async () => {
    const input = runInput('/json {"a":[1,2]}');
    const { frames } = await runToFrames(t.runUrl, input);
    expect(shownText(frames)).toBe('{"a":[1,2]}');
  });

  it('records a run whose client disconnects mid-stream as cancelled', async () => {
    const input = runInput('/slow 200 one two three four five six seven eight nine ten');
    (await postRunUntilText(t.runUrl, input)).abort();
    const row = await endedRunRow(input.runId);
    expect(row).toMatchObject({ status: 'cancelled', error_code: 'CANCELLED' });
    expect(row.finished_at).toBeInstanceOf(Date);
  });

  it('refuses a runId that already exists with 409 RUN_ALREADY_EXISTS, before any stream', async () => {
    const input = runInput('hi');
    await runToFrames(t.runUrl, input);
    const res = await postRun(t.runUrl, { ...input, threadId: uid('thread') });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ statusCode: 409, code: 'RUN_ALREADY_EXISTS' });
  });

  it('answers an unknown forwardedProps.agentId with 404 JSON', async () => {
    const res = await postRun(t.runUrl, runInput('hi', { forwardedProps: { agentId: 'nope' } }));
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
  });

  it('accepts unknown forwardedProps keys and AG-UI extras (state, parentRunId, protocolVersion)', async () => {
    const input = runInput('hi', {
      forwardedProps: { somethingNew: { deep: true } },
      state: { a: 1 },
      parentRunId: 'p1',
      protocolVersion: '1.0.0',
    });
    const { res, frames } = await runToFrames(t.runUrl, input);
    expect(res.status).toBe(200);
    assertStreamRules(frames, input);
  });

  describe('bad bodies are a 4xx JSON error, never a stream', () => {
    const valid = () => runInput('hi');
    const without = (key: string) => {
      const body: Record<string, unknown> = valid();
      delete body[key];
      return body;
    };
    const cases: Array<[string, unknown, number, string]> = [
      ['not JSON', '{"threadId":', 400, 'VALIDATION_FAILED'],
      ['a JSON array', '[]', 400, 'VALIDATION_FAILED'],
      ['a JSON string', '"hi"', 400, 'VALIDATION_FAILED'],
      ['no threadId', without('threadId'), 400, 'VALIDATION_FAILED'],
      ['no runId', without('runId'), 400, 'VALIDATION_FAILED'],
      ['no messages', without('messages'), 400, 'VALIDATION_FAILED'],
      ['tools not an array', { ...valid(), tools: {} }, 400, 'VALIDATION_FAILED'],
      ['context null', { ...valid(), context: null }, 400, 'VALIDATION_FAILED'],
      ['empty threadId', { ...valid(), threadId: '' }, 400, 'VALIDATION_FAILED'],
      ['numeric runId', { ...valid(), runId: 42 }, 400, 'VALIDATION_FAILED'],
      ['messages not an array', { ...valid(), messages: {} }, 400, 'VALIDATION_FAILED'],
      [
        'unknown role',
        { ...valid(), messages: [{ id: 'm', role: 'wizard', content: 'x' }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'message without id',
        { ...valid(), messages: [{ role: 'user', content: 'x' }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'user content a number',
        { ...valid(), messages: [{ id: 'm', role: 'user', content: 3 }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'user content part of unknown type',
        { ...valid(), messages: [{ id: 'm', role: 'user', content: [{ type: 'hologram' }] }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'tool message without toolCallId',
        { ...valid(), messages: [{ id: 'm', role: 'tool', content: 'x' }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'assistant toolCalls malformed',
        {
          ...valid(),
          messages: [{ id: 'm', role: 'assistant', toolCalls: [{ id: 'c', type: 'function' }] }],
        },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'duplicate message ids',
        {
          ...valid(),
          messages: [
            { id: 'm', role: 'user', content: 'a' },
            { id: 'm', role: 'user', content: 'b' },
          ],
        },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'tool parameters not an object',
        { ...valid(), tools: [{ name: 't', description: 'd', parameters: 'x' }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'tool parameters of type string',
        { ...valid(), tools: [{ name: 't', description: 'd', parameters: { type: 'string' } }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'tool parameters an invalid schema',
        {
          ...valid(),
          tools: [{ name: 't', description: 'd', parameters: { type: 'object', properties: 5 } }],
        },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'tool without a name',
        { ...valid(), tools: [{ description: 'd', parameters: { type: 'object' } }] },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'duplicate tool names',
        {
          ...valid(),
          tools: [
            { name: 't', description: 'd' },
            { name: 't', description: 'e' },
          ],
        },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'context entry without value',
        { ...valid(), context: [{ description: 'd' }] },
        400,
        'VALIDATION_FAILED',
      ],
      ['forwardedProps not an object', { ...valid(), forwardedProps: 'x' }, 400, 'VALIDATION_FAILED'],
      [
        'forwardedProps.agentId not a string',
        { ...valid(), forwardedProps: { agentId: 5 } },
        400,
        'VALIDATION_FAILED',
      ],
      [
        'forwardedProps.resourceId not a string',
        { ...valid(), forwardedProps: { resourceId: {} } },
        400,
        'VALIDATION_FAILED',
      ],
    ];
    it.each(cases.map(([name, ...rest]) => [`${name} → ${rest[1]} ${rest[2]}`, ...rest] as const))(
      '%s',
      async (_name, body, status, code) => {
        const res = await postRun(t.runUrl, body);
        expect(res.status).toBe(status);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        const json = await res.json();
        expect(json).toMatchObject({ statusCode: status, code });
        expect(typeof json.message).toBe('string');
      },
    );

    it('a text/plain body → 400 VALIDATION_FAILED', async () => {
      const res = await fetch(t.runUrl, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'hi',
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    });

    it('names the invalid field in details', async () => {
      const res = await postRun(t.runUrl, {
        ...valid(),
        messages: [{ id: 'm', role: 'wizard', content: 'x' }],
      });
      const json = await res.json();
      expect(json.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: 'messages.0.role' })]),
      );
    });

    it('an unknown route is a 404 in the same envelope', async () => {
      const res = await fetch(`${t.baseUrl}/io-bridge/nope`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
    });
  });
});

describe('limits and heartbeats', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ HEARTBEAT_MS: '40', MAX_BODY_BYTES: '4096', MAX_MESSAGES: '3' });
  });
  afterAll(() => t.close());

  it('keeps an idle stream alive with `: ping` comments', async () => {
    const input = runInput('/slow 150 a b c');
    const res = await postRun(t.runUrl, input);
    const { frames, pings } = parseFrames(await res.text());
    expect(pings).toBeGreaterThan(0);
    assertStreamRules(frames, input);
  });

  it('refuses a body over MAX_BODY_BYTES with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await postRun(t.runUrl, runInput('x'.repeat(5000)));
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('refuses more messages than MAX_MESSAGES with 400', async () => {
    const messages = [1, 2, 3, 4].map((i) => ({ id: `m${i}`, role: 'user', content: 'x' }));
    const res = await postRun(t.runUrl, runInput('x', { messages }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'messages' }] });
  });
});
