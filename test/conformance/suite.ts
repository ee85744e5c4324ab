import { HttpAgent } from '@ag-ui/client';
import { EventSchema } from '@ag-ui/core/schemas';
import { assertStreamRules } from '../support/stream-rules';
import { Client, clientFor, Event, expectAccepted, kitId, runBody } from './http';
import { ConformanceOptions, ConformanceTarget, DEFAULT_OPTIONS, FRONTEND_TOOL } from './options';

/** The event types CONTRACT section 3 allows (plus REASONING_*, where the model reasons). */
const CONTRACT_EVENTS = new Set([
  'RUN_STARTED',
  'RUN_FINISHED',
  'RUN_ERROR',
  'TEXT_MESSAGE_START',
  'TEXT_MESSAGE_CONTENT',
  'TEXT_MESSAGE_END',
  'TOOL_CALL_START',
  'TOOL_CALL_ARGS',
  'TOOL_CALL_END',
  'TOOL_CALL_RESULT',
  'STEP_STARTED',
  'STEP_FINISHED',
]);

/** `nextCursor`: a string, or null on the last page. */
const CURSOR = {
  asymmetricMatch: (v: unknown) => v === null || typeof v === 'string',
  toAsymmetricMatcher: () => 'a string or null',
};
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const DAY_MS = 24 * 3600 * 1000;

export type SuiteHooks = {
  /** Called with a failing test's title and error before the failure is reported (e.g. to print server logs). */
  onFailure?: (title: string, error: unknown) => void;
  /**
   * Titles of checks the backend is known to fail: they run as `it.failing`, so the suite stays green
   * while they fail and turns red the day one passes (then drop it from the list).
   */
  knownDeviations?: string[];
};

function hasNull(value: unknown, path = '$'): string | undefined {
  if (value === null) return path;
  if (typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      const hit = hasNull(v, `${path}.${k}`);
      if (hit) return hit;
    }
  return undefined;
}

/** The error envelope of CONTRACT section 1: `{statusCode, code, message, details?}` as JSON, nothing else. */
export async function expectErrorEnvelope(res: Response, status: number, code?: string) {
  const text = await res.text();
  expect({ status: res.status, body: text }).toMatchObject({ status });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expect(body).toEqual({
    statusCode: status,
    code: code ?? expect.stringMatching(/^[A-Z][A-Z_]+$/),
    message: expect.stringMatching(/\S/),
    ...('details' in body ? { details: expect.anything() } : {}),
  });
  return body as { statusCode: number; code: string; message: string; details?: unknown };
}

const ofType = (events: Event[], type: string) => events.filter((e) => e.type === type);

/** Each tool call of a stream: its name, its argument text, and the events of its result. */
function toolCalls(events: Event[]) {
  return ofType(events, 'TOOL_CALL_START').map((start) => ({
    toolCallId: start.toolCallId as string,
    name: start.toolCallName as string,
    start,
    args: ofType(events, 'TOOL_CALL_ARGS')
      .filter((e) => e.toolCallId === start.toolCallId)
      .map((e) => e.delta as string)
      .join(''),
    endIndex: events.findIndex((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId),
    results: ofType(events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === start.toolCallId),
  }));
}

const shownText = (events: Event[]) =>
  ofType(events, 'TEXT_MESSAGE_CONTENT')
    .map((e) => e.delta as string)
    .join('');

/**
 * Registers the conformance tests of the io.Intelligence Agent Protocol (agent-protocol-seed.txt) as this
 * service's contract pins it down (CONTRACT.md), one `describe` per level. `target` is read when the tests
 * run, so a `beforeAll` may start the backend first.
 */
export function defineConformanceSuite(
  target: () => ConformanceTarget,
  options: Partial<ConformanceOptions> = {},
  hooks: SuiteHooks = {},
): void {
  const opts: ConformanceOptions = {
    ...DEFAULT_OPTIONS,
    ...options,
    prompts: { ...DEFAULT_OPTIONS.prompts, ...options.prompts },
  };
  const { prompts, agentId } = opts;
  const known = new Set(hooks.knownDeviations ?? []);
  const registered = new Set<string>();
  const test = (title: string, fn: () => Promise<void>) => {
    registered.add(title);
    if (known.has(title)) return it.failing(`[known deviation] ${title}`, fn);
    it(title, async () => {
      try {
        await fn();
      } catch (err) {
        hooks.onFailure?.(title, err);
        throw err;
      }
    });
  };
  let cached: Client | undefined;
  const client = () => (cached ??= clientFor(target()));
  const body = (text: string, extra: Record<string, unknown> = {}) => runBody(text, agentId, extra);
  /** One value per suite, computed by the first test that needs it. */
  const shared = <T>(make: () => Promise<T>) => {
    let value: Promise<T> | undefined;
    return () => (value ??= make());
  };

  const levels = new Set(opts.levels);

  (levels.has(1) ? describe : describe.skip)('Level 1: POST /run streaming core', () => {
    const plain = shared(async () => {
      const input = body(prompts.text);
      const run = await client().run(input);
      expectAccepted(run);
      return { input, ...run };
    });

    test('answers 200 text/event-stream with Cache-Control no-cache and X-Accel-Buffering no', async () => {
      const { res } = await plain();
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream\b/);
      expect(res.headers.get('cache-control')).toMatch(/\bno-cache\b/);
      expect(res.headers.get('x-accel-buffering')).toBe('no');
    });

    test('frames each event on the raw bytes as `id: <seq>` + `data: <json>` + blank line, UTF-8, LF only, no `event:` line, seq from 1', async () => {
      const { bytes, frames } = await plain();
      const raw = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      expect(raw).not.toContain('\r');
      expect(raw).not.toMatch(/^event:/m);
      const blocks = raw.slice(0, -2).split('\n\n');
      expect(raw.endsWith('\n\n')).toBe(true);
      for (const block of blocks) expect(block).toMatch(/^(: ping|id: \d+\ndata: [^\n]+)$/);
      expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => i + 1));
    });

    test('starts with RUN_STARTED echoing the threadId and runId', async () => {
      const { events, input } = await plain();
      expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: input.threadId, runId: input.runId });
      expect(ofType(events, 'RUN_STARTED')).toHaveLength(1);
    });

    test('ends with exactly one terminal event, RUN_FINISHED echoing the ids, and nothing after it', async () => {
      const { events, input } = await plain();
      const terminal = events.filter((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR');
      expect(terminal).toHaveLength(1);
      expect(events.at(-1)).toBe(terminal[0]);
      expect(terminal[0]).toMatchObject({
        type: 'RUN_FINISHED',
        threadId: input.threadId,
        runId: input.runId,
      });
    });

    test('streams the answer as assistant text messages, each closed before the end, with no empty delta', async () => {
      const { events } = await plain();
      const starts = ofType(events, 'TEXT_MESSAGE_START');
      expect(starts.length).toBeGreaterThan(0);
      for (const start of starts) {
        expect(start.role).toBe('assistant');
        const mine = events.filter((e) => e.messageId === start.messageId).map((e) => e.type);
        expect(mine[0]).toBe('TEXT_MESSAGE_START');
        expect(mine.at(-1)).toBe('TEXT_MESSAGE_END');
        expect(mine.filter((t) => t === 'TEXT_MESSAGE_END')).toHaveLength(1);
      }
      for (const content of ofType(events, 'TEXT_MESSAGE_CONTENT'))
        expect(content.delta).toEqual(expect.stringMatching(/^[\s\S]+$/));
      expect(shownText(events).trim()).not.toBe('');
    });

    test('stamps every event with an integer epoch-milliseconds timestamp', async () => {
      const { events } = await plain();
      for (const e of events) {
        expect(Number.isInteger(e.timestamp)).toBe(true);
        expect(Math.abs(e.timestamp - Date.now())).toBeLessThan(DAY_MS);
      }
    });

    test('never sends null for an optional field', async () => {
      const { events } = await plain();
      expect(events.map((e, i) => hasNull(e, `event ${i + 1}`)).filter(Boolean)).toEqual([]);
    });

    test("uses only the contract's event types, each valid against the AG-UI 1.0 event schema", async () => {
      const { events } = await plain();
      for (const e of events) {
        expect(CONTRACT_EVENTS.has(e.type) || /^REASONING_/.test(e.type)).toBe(true);
        const parsed = EventSchema.safeParse(e);
        expect(parsed.success ? 'valid' : `${e.type}: ${parsed.error.message}`).toBe('valid');
      }
    });

    test('keeps every lifecycle guarantee at once (the stream-rules check)', async () => {
      const { frames, input } = await plain();
      expect(() => assertStreamRules(frames, input)).not.toThrow();
    });

    test('tolerates unknown forwardedProps keys', async () => {
      const input = body(prompts.text, {
        forwardedProps: { ...(agentId ? { agentId } : {}), conformanceUnknownKey: { nested: [1, 'two'] } },
      });
      const run = await client().run(input);
      expectAccepted(run);
      assertStreamRules(run.frames, input);
      expect(run.frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    });

    test('accepts a tool declared without a description (CONTRACT §2)', async () => {
      const input = body(prompts.text, {
        tools: [{ name: FRONTEND_TOOL.name, parameters: FRONTEND_TOOL.parameters }],
      });
      const run = await client().run(input);
      expectAccepted(run);
      assertStreamRules(run.frames, input);
    });

    test('accepts a body without tools and context: they default to [] (CONTRACT §2)', async () => {
      const input: Record<string, unknown> = body(prompts.text);
      delete input.tools;
      delete input.context;
      const run = await client().run(input);
      expectAccepted(run);
      const { frames } = run;
      assertStreamRules(frames, input as { threadId: string; runId: string });
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    });

    test('accepts activity and reasoning messages in the history', async () => {
      const input = body(prompts.text);
      input.messages = [
        { id: kitId('activity'), role: 'activity', activityType: 'conformance', content: { step: 1 } } as any,
        { id: kitId('reasoning'), role: 'reasoning', content: 'thinking about it' },
        ...input.messages,
      ];
      const run = await client().run(input);
      expectAccepted(run);
      const { frames } = run;
      assertStreamRules(frames, input);
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    });

    test('answers a bad body with a 400 JSON error envelope, never a stream', async () => {
      const good = body(prompts.text);
      const bad: [string, unknown][] = [
        ['not JSON', '{"threadId": '],
        ['an empty object', {}],
        ['no runId', { ...good, runId: undefined }],
        ['messages not an array', { ...good, messages: 'hi' }],
        ['an unknown role', { ...good, messages: [{ id: 'm1', role: 'wizard', content: 'hi' }] }],
        ['a tool without a JSON Schema object', { ...good, tools: [{ name: 'x', parameters: 'nope' }] }],
        ['forwardedProps not an object', { ...good, forwardedProps: 'x' }],
      ];
      for (const [what, payload] of bad) {
        const res = await client().request('/run', {
          body: payload,
          headers: { accept: 'text/event-stream' },
        });
        try {
          await expectErrorEnvelope(res, 400, 'VALIDATION_FAILED');
        } catch (err) {
          throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
        }
      }
    });

    test('answers a runId used before with 409 RUN_ALREADY_EXISTS, never a stream', async () => {
      const { input } = await plain();
      const again = { ...body(prompts.text), runId: input.runId };
      const res = await client().request('/run', { body: again, headers: { accept: 'text/event-stream' } });
      await expectErrorEnvelope(res, 409, 'RUN_ALREADY_EXISTS');
    });

    test('is accepted by the official @ag-ui/client HttpAgent, which rebuilds the assistant message', async () => {
      const agent = new HttpAgent({
        url: `${client().base}/run`,
        headers: client().headers,
        threadId: kitId('thread'),
      });
      agent.addMessage({ id: kitId('msg'), role: 'user', content: prompts.text });
      const errors: unknown[] = [];
      const { newMessages } = await agent.runAgent(
        { runId: kitId('run'), forwardedProps: agentId ? { agentId } : {} },
        { onRunErrorEvent: ({ event }) => void errors.push(event) },
      );
      expect(errors).toEqual([]);
      const assistant = newMessages.filter((m) => m.role === 'assistant');
      expect(assistant.length).toBeGreaterThan(0);
      expect(assistant.map((m) => m.content ?? '').join('')).toMatch(/\S/);
    });
  });

  (levels.has(2) ? describe : describe.skip)('Level 2: tool execution events and the tool loop', () => {
    test('runs a server tool: TOOL_CALL_START/ARGS/END, args forming a JSON object, then TOOL_CALL_RESULT from the backend, then the answer', async () => {
      const input = body(prompts.serverTool);
      const run = await client().run(input);
      expectAccepted(run);
      const { frames, events } = run;
      assertStreamRules(frames, input);
      expect(events.at(-1)!.type).toBe('RUN_FINISHED');
      const calls = toolCalls(events);
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) {
        expect(call.start.parentMessageId).toEqual(expect.stringMatching(/\S/));
        expect(typeof JSON.parse(call.args)).toBe('object');
        expect(call.endIndex).toBeGreaterThan(0);
        expect(call.results).toHaveLength(1);
        const result = call.results[0];
        expect(result).toMatchObject({
          role: 'tool',
          content: expect.any(String),
          messageId: expect.any(String),
        });
        expect(events.indexOf(result)).toBeGreaterThan(call.endIndex);
      }
      const lastResult = Math.max(...ofType(events, 'TOOL_CALL_RESULT').map((e) => events.indexOf(e)));
      expect(ofType(events.slice(lastResult), 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(0);
    });

    test('streams a frontend tool call, waits inside the same run for POST /runs/:runId/tool-calls/:toolCallId/result (202), then emits TOOL_CALL_RESULT and goes on', async () => {
      const input = body(prompts.frontendTool, { tools: [FRONTEND_TOOL] });
      const live = await client().openRun(input);
      expectAccepted(live);
      const start = await live.waitFor(
        (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === FRONTEND_TOOL.name,
      );
      const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
      const args = live.frames
        .map((f) => f.event)
        .filter((e) => e.type === 'TOOL_CALL_ARGS' && e.toolCallId === start.toolCallId)
        .map((e) => e.delta as string)
        .join('');
      expect(JSON.parse(args)).toEqual(expect.objectContaining({ query: expect.any(String) }));
      // The run is waiting: no result for this call yet, and the stream is not over.
      expect(
        live.frames.some((f) => f.event.type === 'TOOL_CALL_RESULT' && f.event.toolCallId === end.toolCallId),
      ).toBe(false);
      const posted = await client().postToolResult(input.runId, end.toolCallId, {
        content: { answer: 'conformance-42' },
      });
      expect(posted).toMatchObject({ status: 202, body: { accepted: true } });
      const frames = await live.done;
      assertStreamRules(frames, input);
      const events = frames.map((f) => f.event);
      expect(ofType(events, 'RUN_STARTED')).toHaveLength(1);
      expect(events.at(-1)!.type).toBe('RUN_FINISHED');
      const results = ofType(events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === end.toolCallId);
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ role: 'tool', messageId: expect.any(String) });
      expect(JSON.parse(results[0].content)).toEqual({ answer: 'conformance-42' });
      expect(ofType(events.slice(events.indexOf(results[0])), 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(
        0,
      );
    });

    test('answers result posts: unknown tool call 404, second result 409, after the run 409 RUN_NOT_ACTIVE, unknown run 404', async () => {
      const input = body(prompts.frontendTool, { tools: [FRONTEND_TOOL] });
      const live = await client().openRun(input);
      const start = await live.waitFor(
        (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === FRONTEND_TOOL.name,
      );
      await live.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
      const path = (runId: string, callId: string) =>
        `/runs/${encodeURIComponent(runId)}/tool-calls/${encodeURIComponent(callId)}/result`;
      await expectErrorEnvelope(
        await client().request(path(input.runId, kitId('no-such-call')), { body: { content: 'x' } }),
        404,
        'NOT_FOUND',
      );
      expect(
        (await client().postToolResult(input.runId, start.toolCallId, { content: 'first' })).status,
      ).toBe(202);
      const second = await client().request(path(input.runId, start.toolCallId), {
        body: { content: 'second' },
      });
      const { code } = await expectErrorEnvelope(second, 409);
      // The run may have ended already once the first result let it go on.
      expect(['TOOL_RESULT_ALREADY_SUBMITTED', 'RUN_NOT_ACTIVE']).toContain(code);
      const frames = await live.done;
      const results = frames.filter((f) => f.event.type === 'TOOL_CALL_RESULT');
      expect(results.map((f) => f.event.content)).toEqual(['first']);
      await expectErrorEnvelope(
        await client().request(path(input.runId, start.toolCallId), { body: { content: 'late' } }),
        409,
        'RUN_NOT_ACTIVE',
      );
      await expectErrorEnvelope(
        await client().request(path(kitId('no-such-run'), 'call'), { body: { content: 'x' } }),
        404,
        'NOT_FOUND',
      );
    });

    test('reports {error} from the frontend to the model as a failed call: TOOL_CALL_RESULT, and the run finishes', async () => {
      const input = body(prompts.frontendTool, { tools: [FRONTEND_TOOL] });
      const live = await client().openRun(input);
      const start = await live.waitFor(
        (e) => e.type === 'TOOL_CALL_START' && e.toolCallName === FRONTEND_TOOL.name,
      );
      await live.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId);
      const posted = await client().postToolResult(input.runId, start.toolCallId, { error: 'user declined' });
      expect(posted.status).toBe(202);
      const frames = await live.done;
      assertStreamRules(frames, input);
      const events = frames.map((f) => f.event);
      expect(
        ofType(events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === start.toolCallId),
      ).toHaveLength(1);
      expect(events.at(-1)!.type).toBe('RUN_FINISHED');
    });

    test('in a mixed turn the server result streams while the frontend call waits, and each call gets exactly one result', async () => {
      const input = body(prompts.mixed, { tools: [FRONTEND_TOOL] });
      const live = await client().openRun(input);
      expectAccepted(live);
      const names = new Map<string, string>();
      live.onEvent((e) => {
        if (e.type === 'TOOL_CALL_START') names.set(e.toolCallId, e.toolCallName);
      });
      const frontend = await live.waitFor(
        (e) => e.type === 'TOOL_CALL_END' && names.get(e.toolCallId) === FRONTEND_TOOL.name,
      );
      // The server tool's result must not wait for the frontend tool's.
      const serverResult = await live.waitFor(
        (e) =>
          e.type === 'TOOL_CALL_RESULT' &&
          names.has(e.toolCallId) &&
          names.get(e.toolCallId) !== FRONTEND_TOOL.name,
      );
      expect(serverResult).toMatchObject({ role: 'tool', content: expect.any(String) });
      const posted = await client().postToolResult(input.runId, frontend.toolCallId, {
        content: 'Lyon is in France',
      });
      expect(posted.status).toBe(202);
      const frames = await live.done;
      assertStreamRules(frames, input);
      const events = frames.map((f) => f.event);
      expect(events.at(-1)!.type).toBe('RUN_FINISHED');
      for (const call of toolCalls(events)) expect(call.results).toHaveLength(1);
      const front = ofType(events, 'TOOL_CALL_RESULT').find((e) => e.toolCallId === frontend.toolCallId)!;
      expect(front.content).toBe('Lyon is in France');
    });

    test('drives the frontend tool loop with the official @ag-ui/client: assistant toolCalls, tool message, then the answer', async () => {
      const agent = new HttpAgent({
        url: `${client().base}/run`,
        headers: client().headers,
        threadId: kitId('thread'),
      });
      agent.addMessage({ id: kitId('msg'), role: 'user', content: prompts.frontendTool });
      const runId = kitId('run');
      const posts: Promise<{ status: number }>[] = [];
      const errors: unknown[] = [];
      const { newMessages } = await agent.runAgent(
        { runId, tools: [FRONTEND_TOOL], forwardedProps: agentId ? { agentId } : {} },
        {
          onRunErrorEvent: ({ event }) => void errors.push(event),
          onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) => {
            if (toolCallName === FRONTEND_TOOL.name)
              posts.push(
                client().postToolResult(runId, event.toolCallId, { content: `found ${toolCallArgs.query}` }),
              );
          },
        },
      );
      expect(errors).toEqual([]);
      expect((await Promise.all(posts)).map((p) => p.status)).toEqual(posts.map(() => 202));
      expect(posts.length).toBeGreaterThan(0);
      const call = newMessages.find((m) => m.role === 'assistant' && m.toolCalls?.length) as any;
      expect(call.toolCalls[0].function.name).toBe(FRONTEND_TOOL.name);
      expect(typeof JSON.parse(call.toolCalls[0].function.arguments)).toBe('object');
      const tool = newMessages.find((m) => m.role === 'tool') as any;
      expect(tool).toMatchObject({
        toolCallId: call.toolCalls[0].id,
        content: expect.stringMatching(/^found /),
      });
      expect(newMessages.at(-1)).toMatchObject({ role: 'assistant', content: expect.stringMatching(/\S/) });
    });
  });

  (levels.has(3) ? describe : describe.skip)('Level 3: thread and message persistence routes', () => {
    const expectThread = (thread: any) => {
      expect(thread).toEqual(
        expect.objectContaining({
          id: expect.any(String),
          resourceId: expect.any(String),
          metadata: expect.any(Object),
          createdAt: expect.stringMatching(ISO_8601),
          updatedAt: expect.stringMatching(ISO_8601),
        }),
      );
      expect(hasNull(thread)).toBeUndefined();
    };
    const createThread = async (payload: unknown, status = 201) => {
      const created = await client().json('/threads', { body: payload });
      expect({ status: created.status, body: created.body }).toMatchObject({ status });
      expectThread(created.body);
      return created.body;
    };

    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['{}', {}, { metadata: {} }],
      ['{title}', { title: 'Conformance title' }, { title: 'Conformance title' }],
      [
        '{metadata}',
        { metadata: { a: 1, nested: { b: [true] } } },
        { metadata: { a: 1, nested: { b: [true] } } },
      ],
    ];
    for (const [what, payload, expected] of cases)
      test(`POST /threads with ${what} → 201 Thread with a generated id`, async () => {
        const thread = await createThread(payload);
        expect(thread.id).toMatch(/\S/);
        expect(thread).toMatchObject(expected);
      });

    test('POST /threads with an id → 201 with that id; the same id again → 200 with the same thread', async () => {
      const id = kitId('thread');
      const thread = await createThread({ id, title: 'mine' });
      expect(thread).toMatchObject({ id, title: 'mine' });
      expect(await createThread({ id }, 200)).toEqual(thread);
    });

    test('POST /threads with a bad body → 400 VALIDATION_FAILED', async () => {
      await expectErrorEnvelope(
        await client().request('/threads', { body: { metadata: 'x' } }),
        400,
        'VALIDATION_FAILED',
      );
    });

    test('GET /threads lists newest first and pages with limit and nextCursor, without duplicates', async () => {
      const mine = [];
      for (let i = 0; i < 3; i++) mine.push((await createThread({ title: `page ${i}` })).id as string);
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 50; page++) {
        const query: string = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const { status, body: list } = await client().json(`/threads${query}`);
        expect(status).toBe(200);
        expect(list).toEqual({ threads: expect.any(Array), nextCursor: CURSOR });
        expect(list.threads.length).toBeLessThanOrEqual(2);
        list.threads.forEach(expectThread);
        seen.push(...list.threads.map((t: { id: string }) => t.id));
        cursor = list.nextCursor;
        if (cursor === null || mine.every((id) => seen.includes(id))) break;
        expect(typeof cursor).toBe('string');
      }
      expect(new Set(seen).size).toBe(seen.length);
      const positions = mine.map((id) => seen.indexOf(id));
      expect(positions.every((p) => p >= 0)).toBe(true);
      expect([...positions].sort((a, b) => b - a)).toEqual(positions);
    });

    test('GET /threads with limit out of 1–100 → 400 VALIDATION_FAILED', async () => {
      for (const limit of ['0', '101'])
        await expectErrorEnvelope(
          await client().request(`/threads?limit=${limit}`),
          400,
          'VALIDATION_FAILED',
        );
    });

    test('GET /threads/:threadId reads one; an unknown id → 404 NOT_FOUND', async () => {
      const thread = await createThread({ title: 'read me', metadata: { k: 'v' } });
      const read = await client().json(`/threads/${encodeURIComponent(thread.id)}`);
      expect(read).toMatchObject({ status: 200, body: thread });
      await expectErrorEnvelope(await client().request(`/threads/${kitId('missing')}`), 404, 'NOT_FOUND');
    });

    test('PATCH /threads/:threadId sets the title and replaces metadata; an unknown id → 404', async () => {
      const thread = await createThread({ title: 'before', metadata: { a: 1, b: 2 } });
      const patched = await client().json(`/threads/${encodeURIComponent(thread.id)}`, {
        method: 'PATCH',
        body: { title: 'after', metadata: { c: 3 } },
      });
      expect(patched.status).toBe(200);
      expectThread(patched.body);
      expect(patched.body).toMatchObject({ id: thread.id, title: 'after', metadata: { c: 3 } });
      expect(patched.body.metadata).toEqual({ c: 3 });
      expect(Date.parse(patched.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(thread.updatedAt));
      expect((await client().json(`/threads/${encodeURIComponent(thread.id)}`)).body).toEqual(patched.body);
      await expectErrorEnvelope(
        await client().request(`/threads/${kitId('missing')}`, { method: 'PATCH', body: { title: 'x' } }),
        404,
        'NOT_FOUND',
      );
    });

    test('DELETE /threads/:threadId → 204; then the thread, its messages and a second DELETE are 404', async () => {
      const thread = await createThread({});
      const path = `/threads/${encodeURIComponent(thread.id)}`;
      const del = await client().request(path, { method: 'DELETE' });
      expect(del.status).toBe(204);
      expect(await del.text()).toBe('');
      await expectErrorEnvelope(await client().request(path), 404, 'NOT_FOUND');
      await expectErrorEnvelope(await client().request(`${path}/messages`), 404, 'NOT_FOUND');
      await expectErrorEnvelope(await client().request(path, { method: 'DELETE' }), 404, 'NOT_FOUND');
    });

    /** A text run on a thread created first: a run on an existing thread of the owner is stored (CONTRACT §2). */
    const conversation = shared(async () => {
      const thread = await createThread({});
      const input = body(prompts.text, { threadId: thread.id });
      const run = await client().run(input);
      expectAccepted(run);
      const { frames, events } = run;
      assertStreamRules(frames, input);
      return { thread, input, events };
    });
    const messages = async (threadId: string, query = '') => {
      const read = await client().json(`/threads/${encodeURIComponent(threadId)}/messages${query}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ messages: expect.any(Array), nextCursor: CURSOR });
      return read.body.messages as any[];
    };

    test('GET /threads/:threadId/messages?format=agui after a run: the user message and the answer, with the ids the events carried', async () => {
      const { thread, input, events } = await conversation();
      const stored = await messages(thread.id, '?format=agui');
      const answerId = ofType(events, 'TEXT_MESSAGE_START')[0].messageId;
      expect(stored).toEqual([
        expect.objectContaining({ id: input.messages[0].id, role: 'user', content: prompts.text }),
        expect.objectContaining({ id: answerId, role: 'assistant', content: shownText(events) }),
      ]);
    });

    test('GET /threads/:threadId/messages (format=ui, the default): {id, threadId, role, createdAt, content {format: 2, parts}}', async () => {
      const { thread, input, events } = await conversation();
      const ui = await messages(thread.id, '?format=ui');
      expect(await messages(thread.id)).toEqual(ui);
      expect(ui).toEqual([
        {
          id: input.messages[0].id,
          threadId: thread.id,
          role: 'user',
          createdAt: expect.stringMatching(ISO_8601),
          content: { format: 2, parts: expect.arrayContaining([{ type: 'text', text: prompts.text }]) },
        },
        expect.objectContaining({
          threadId: thread.id,
          role: 'assistant',
          createdAt: expect.stringMatching(ISO_8601),
          content: { format: 2, parts: expect.arrayContaining([{ type: 'text', text: shownText(events) }]) },
        }),
      ]);
      expect(ui.map((m) => hasNull(m)).filter(Boolean)).toEqual([]);
    });

    test('GET /threads/:threadId/messages?limit=1 returns the latest message', async () => {
      const { thread } = await conversation();
      const latest = await messages(thread.id, '?format=agui&limit=1');
      expect(latest).toEqual([expect.objectContaining({ role: 'assistant' })]);
    });

    test('keeps replayable tool history: assistant toolCalls and the tool message toolCallId (agui), one tool-invocation part with its result (ui)', async () => {
      const thread = await createThread({});
      const input = body(prompts.serverTool, { threadId: thread.id });
      const { frames, events } = await client().run(input);
      assertStreamRules(frames, input);
      const [call] = toolCalls(events);
      const agui = await messages(thread.id, '?format=agui');
      const withCalls = agui.find((m) => m.role === 'assistant' && m.toolCalls?.length);
      expect(withCalls.toolCalls).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            id: call.toolCallId,
            type: 'function',
            function: { name: call.name, arguments: expect.any(String) },
          }),
        ]),
      );
      expect(agui).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: call.toolCallId }));
      const parts = (await messages(thread.id, '?format=ui')).flatMap((m) => m.content.parts);
      const invocations = parts.filter(
        (p) => p.type === 'tool-invocation' && p.toolInvocation.toolCallId === call.toolCallId,
      );
      expect(invocations).toEqual([
        {
          type: 'tool-invocation',
          toolInvocation: expect.objectContaining({
            state: 'result',
            toolCallId: call.toolCallId,
            toolName: call.name,
          }),
        },
      ]);
    });

    test('a run whose forwardedProps.memory names a new thread creates it for the caller', async () => {
      const input = body(prompts.text);
      input.forwardedProps = { ...input.forwardedProps, memory: { thread: input.threadId } };
      const run = await client().run(input);
      expectAccepted(run);
      const { frames } = run;
      assertStreamRules(frames, input);
      const read = await client().json(`/threads/${encodeURIComponent(input.threadId)}`);
      expect(read.status).toBe(200);
      expectThread(read.body);
      expect((await messages(input.threadId, '?format=agui')).map((m) => m.role)).toEqual([
        'user',
        'assistant',
      ]);
    });

    test('GET /threads/:threadId/messages of an unknown thread → 404 NOT_FOUND', async () => {
      await expectErrorEnvelope(
        await client().request(`/threads/${kitId('missing')}/messages`),
        404,
        'NOT_FOUND',
      );
    });
  });

  (levels.has(4) ? describe : describe.skip)('Level 4: agent discovery routes', () => {
    const list = shared(async () => {
      const read = await client().json('/agents');
      expect(read.status).toBe(200);
      return read.body as { agents: any[]; defaultAgentId: string };
    });
    const expectAgent = (agent: any) => {
      expect(agent).toEqual(
        expect.objectContaining({
          id: expect.any(String),
          name: expect.any(String),
          modelId: expect.any(String),
          tools: expect.any(Array),
          capabilities: expect.objectContaining({
            frontendTools: true,
            structuredOutput: expect.any(Boolean),
            memory: expect.any(Boolean),
          }),
        }),
      );
      for (const tool of agent.tools)
        expect(tool).toEqual(expect.objectContaining({ name: expect.any(String) }));
      expect(hasNull(agent)).toBeUndefined();
    };

    test('GET /agents → {agents: Agent[], defaultAgentId}, the default among them', async () => {
      const { agents, defaultAgentId } = await list();
      expect(agents.length).toBeGreaterThan(0);
      agents.forEach(expectAgent);
      expect(agents.map((a) => a.id)).toContain(defaultAgentId);
      expect(new Set(agents.map((a) => a.id)).size).toBe(agents.length);
      if (agentId) expect(agents.map((a) => a.id)).toContain(agentId);
    });

    test('GET /agents/:agentId reads each agent as the list shows it', async () => {
      for (const agent of (await list()).agents) {
        const read = await client().json(`/agents/${encodeURIComponent(agent.id)}`);
        expect(read).toMatchObject({ status: 200, body: agent });
      }
    });

    test('GET /agents/:agentId of an unknown agent → 404 NOT_FOUND', async () => {
      await expectErrorEnvelope(
        await client().request(`/agents/${kitId('no-such-agent')}`),
        404,
        'NOT_FOUND',
      );
    });

    test('POST /run naming an unknown agent in forwardedProps.agentId → 404 before any stream', async () => {
      const input = runBody(prompts.text, kitId('no-such-agent'));
      const res = await client().request('/run', { body: input, headers: { accept: 'text/event-stream' } });
      await expectErrorEnvelope(res, 404, 'NOT_FOUND');
    });
  });
  const stale = [...known].filter((title) => !registered.has(title));
  if (stale.length) throw new Error(`knownDeviations names no check: ${stale.join('; ')}`);
}
