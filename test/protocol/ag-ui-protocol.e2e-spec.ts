import { Client } from 'pg';
import {
  postRun,
  runInput,
  runToFrames,
  shownText,
  types,
  uid,
  memoryOf,
  Frame,
  readRun,
} from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';
import { BuiltService, startBuiltService } from '../support/built-service';

type Input = ReturnType<typeof runInput> & Record<string, any>;

/**
 * docs/clients.md against the built service: one server for both kinds of client. Instance `a`
 * runs CLIENT_PROTOCOL=ag-ui, instance `b` the default (io-intelligence); both share the database, so
 * a run interrupted on one is resumed on the other.
 */
describe('AG-UI 1.0 clients and io.Assist on one service (built, black-box)', () => {
  let a: BuiltService | undefined;
  let b: BuiltService | undefined;
  beforeAll(async () => {
    [a, b] = await Promise.all([
      startBuiltService({ DATABASE_URL: process.env.E2E_DATABASE_URL!, CLIENT_PROTOCOL: 'ag-ui' }),
      startBuiltService({ DATABASE_URL: process.env.E2E_DATABASE_URL! }),
    ]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const test = (title: string, fn: () => Promise<void>, timeout?: number) =>
    it(
      title,
      async () => {
        try {
          await fn();
        } catch (err) {
          process.stderr.write(`\n--- "${title}" failed; a:\n${a?.output()}\n--- b:\n${b?.output()}\n---\n`);
          throw err;
        }
      },
      timeout,
    );

  const runUrl = (s: BuiltService | undefined) => `${s!.base}/run`;
  const finished = (frames: Frame[]) => frames.at(-1)!.event;
  const BROWSER_TOOL = {
    name: 'browser_alert',
    description: 'Shows a message',
    parameters: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  };
  const messages = async (s: BuiltService | undefined, threadId: string) =>
    (await (await fetch(`${s!.base}/threads/${threadId}/messages?format=agui`)).json()).messages as Array<
      Record<string, any>
    >;

  describe('frontend tools the AG-UI way (CLIENT_PROTOCOL=ag-ui)', () => {
    test('a 1.x request: the step ends the run with outcome.pendingToolCallIds; the next run with the tool message goes on, each stored once', async () => {
      const input: Input = runInput('/tool browser_alert {"message":"hi"}', {
        tools: [BROWSER_TOOL],
        protocolVersion: '1.0',
      });
      input.forwardedProps = memoryOf(input.threadId);
      const { res, frames } = await runToFrames(runUrl(a), input);
      expect(res.status).toBe(200);
      assertStreamRules(frames, input);
      const start = frames.find((f) => f.event.type === 'TOOL_CALL_START')!.event;
      expect(start.toolCallName).toBe('browser_alert');
      expect(finished(frames)).toMatchObject({
        type: 'RUN_FINISHED',
        outcome: { type: 'success', pendingToolCallIds: [start.toolCallId] },
      });
      const run = await (await fetch(`${a!.base}/runs/${input.runId}`)).json();
      expect(run.status).toBe('finished');

      // The client ran the tool and sends everything it has, as @ag-ui/client does.
      const assistant = {
        id: start.parentMessageId,
        role: 'assistant',
        toolCalls: [
          {
            id: start.toolCallId,
            type: 'function',
            function: { name: 'browser_alert', arguments: '{"message":"hi"}' },
          },
        ],
      };
      const toolMessage = {
        id: uid('tool'),
        role: 'tool',
        toolCallId: start.toolCallId,
        content: '{"shown":true}',
      };
      const next = {
        threadId: input.threadId,
        runId: uid('run'),
        messages: [...input.messages, assistant, toolMessage],
        tools: [BROWSER_TOOL],
        context: [],
        protocolVersion: '1.0',
        forwardedProps: memoryOf(input.threadId),
      };
      const second = await runToFrames(runUrl(a), next);
      expect(second.res.status).toBe(200);
      assertStreamRules(second.frames, next);
      expect(shownText(second.frames)).toBe('Tool browser_alert returned {"shown":true}');
      expect(finished(second.frames)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      expect(finished(second.frames).outcome.pendingToolCallIds).toBeUndefined();

      const stored = await messages(a, input.threadId);
      expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
      expect(stored[1].toolCalls[0].id).toBe(start.toolCallId);
      expect(stored[2]).toMatchObject({ id: toolMessage.id, toolCallId: start.toolCallId });
    });

    test('a request that declares no version gets a plain RUN_FINISHED (what @ag-ui/client 0.0.x accepts)', async () => {
      const input: Input = runInput('/tool browser_alert {"message":"hi"}', { tools: [BROWSER_TOOL] });
      const { frames } = await runToFrames(runUrl(a), input);
      assertStreamRules(frames, input);
      expect(types(frames)).toContain('TOOL_CALL_END');
      expect(finished(frames)).toEqual({
        type: 'RUN_FINISHED',
        threadId: input.threadId,
        runId: input.runId,
        timestamp: expect.any(Number),
      });
    });

    test('a stateless run goes on from the full history the client sends', async () => {
      const input: Input = runInput(
        '/tool browser_alert {"message":"x"}\n/tool calculate {"expression":"2+2"}',
        {
          tools: [BROWSER_TOOL],
          protocolVersion: '1.0',
        },
      );
      const { frames } = await runToFrames(runUrl(a), input);
      assertStreamRules(frames, input);
      const calls = frames.filter((f) => f.event.type === 'TOOL_CALL_START').map((f) => f.event);
      const browser = calls.find((c) => c.toolCallName === 'browser_alert')!;
      const calc = calls.find((c) => c.toolCallName === 'calculate')!;
      // The server tool of the same step answered before the run ended; only the browser's is pending.
      const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
      expect(result.toolCallId).toBe(calc.toolCallId);
      expect(finished(frames).outcome).toEqual({ type: 'success', pendingToolCallIds: [browser.toolCallId] });
      const history = [
        ...input.messages,
        {
          id: browser.parentMessageId,
          role: 'assistant',
          toolCalls: calls.map((c) => ({
            id: c.toolCallId,
            type: 'function',
            function: {
              name: c.toolCallName,
              arguments: c.toolCallName === 'calculate' ? '{"expression":"2+2"}' : '{"message":"x"}',
            },
          })),
        },
        { id: result.messageId, role: 'tool', toolCallId: calc.toolCallId, content: result.content },
        { id: uid('tool'), role: 'tool', toolCallId: browser.toolCallId, content: 'ok' },
      ];
      const next = {
        ...runInput('', { tools: [BROWSER_TOOL], protocolVersion: '1.0' }),
        threadId: input.threadId,
        messages: history,
      };
      const second = await runToFrames(runUrl(a), next);
      assertStreamRules(second.frames, next);
      expect(shownText(second.frames).split('\n').sort()).toEqual([
        'Tool browser_alert returned "ok"',
        'Tool calculate returned {"expression":"2+2","result":4}',
      ]);
      const thread = await fetch(`${a!.base}/threads/${input.threadId}`);
      expect(thread.status).toBe(404);
    });

    test('forwardedProps.clientProtocol picks the protocol per run, on either server', async () => {
      const agUi = runInput('/tool browser_alert {"message":"hi"}', {
        tools: [BROWSER_TOOL],
        protocolVersion: '1.0',
        forwardedProps: { clientProtocol: 'ag-ui' },
      });
      const { frames } = await runToFrames(runUrl(b), agUi);
      expect(finished(frames).outcome.type).toBe('success');
      expect(finished(frames).outcome.pendingToolCallIds).toHaveLength(1);

      // The io.Intelligence way on the ag-ui server: the run waits for the posted result.
      const seed = runInput('/tool browser_alert {"message":"hi"}', {
        tools: [BROWSER_TOOL],
        forwardedProps: { clientProtocol: 'io-intelligence' },
      });
      const live = await readRun(await postRun(runUrl(a), seed));
      const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
      const posted = await fetch(`${a!.base}/runs/${seed.runId}/tool-calls/${end.toolCallId}/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'done' }),
      });
      expect(posted.status).toBe(202);
      const seedFrames = await live.done;
      expect(shownText(seedFrames)).toBe('Tool browser_alert returned "done"');

      const bad = await postRun(
        runUrl(a),
        runInput('hi', { forwardedProps: { clientProtocol: 'carrier-pigeon' } }),
      );
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [{ path: 'forwardedProps.clientProtocol' }],
      });
    });

    test('a cancelled 1.x run ends RUN_FINISHED outcome cancelled; pre-1.0 and io-intelligence keep RUN_ERROR CANCELLED', async () => {
      for (const [protocolVersion, expected] of [
        ['1.0', { type: 'RUN_FINISHED', outcome: { type: 'cancelled' } }],
        [undefined, { type: 'RUN_ERROR', code: 'CANCELLED' }],
      ] as const) {
        const input: Input = runInput('/slow 200 one two three four five six', {
          ...(protocolVersion ? { protocolVersion } : {}),
        });
        const live = await readRun(await postRun(runUrl(a), input));
        await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
        expect((await fetch(`${a!.base}/runs/${input.runId}/cancel`, { method: 'POST' })).status).toBe(202);
        const frames = await live.done;
        assertStreamRules(frames, input);
        expect(finished(frames)).toMatchObject(expected);
      }
      const seed = runInput('/slow 200 one two three four five six', { protocolVersion: '1.0' });
      const live = await readRun(await postRun(runUrl(b), seed));
      await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      await fetch(`${b!.base}/runs/${seed.runId}/cancel`, { method: 'POST' });
      expect(finished(await live.done)).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    });
  });

  describe('approvals as interrupts (both protocols)', () => {
    const interruptedOn = async (s: BuiltService | undefined, protocolVersion?: string) => {
      const input: Input = runInput('/tool publish_note {"text":"hello world"}', {
        ...(protocolVersion ? { protocolVersion } : {}),
      });
      input.forwardedProps = memoryOf(input.threadId);
      const { res, frames } = await runToFrames(runUrl(s), input);
      expect(res.status).toBe(200);
      assertStreamRules(frames, input);
      const start = frames.find((f) => f.event.type === 'TOOL_CALL_START')!.event;
      expect(types(frames)).not.toContain('TOOL_CALL_RESULT');
      return { input, frames, toolCallId: start.toolCallId as string };
    };
    const resume = (
      s: BuiltService | undefined,
      threadId: string,
      interruptId: string,
      approved: boolean,
      extra = {},
    ) => {
      const body = {
        threadId,
        runId: uid('run'),
        messages: [],
        protocolVersion: '1.0',
        resume: [{ interruptId, status: 'resolved', payload: { approved } }],
        forwardedProps: memoryOf(threadId),
        ...extra,
      };
      return { body, response: postRun(runUrl(s), body) };
    };

    test('1.x: RUN_FINISHED outcome interrupt; approved on the other instance the tool runs; the answer is audited', async () => {
      const { input, frames, toolCallId } = await interruptedOn(a, '1.0');
      const outcome = finished(frames).outcome;
      expect(outcome).toEqual({
        type: 'interrupt',
        interrupts: [
          {
            id: expect.any(String),
            reason: 'tool_approval',
            toolCallId,
            message: expect.stringContaining('publish_note'),
            expiresAt: expect.any(String),
            responseSchema: expect.objectContaining({ type: 'object' }),
          },
        ],
      });
      const interruptId = outcome.interrupts[0].id;
      const { body, response } = resume(b, input.threadId, interruptId, true);
      const res = await response;
      expect(res.status).toBe(200);
      const { frames: resumed } = { frames: await readRun(res).then((r) => r.done) };
      assertStreamRules(resumed, body);
      const result = resumed.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
      expect(result.toolCallId).toBe(toolCallId);
      expect(JSON.parse(result.content)).toMatchObject({ published: true, text: 'hello world' });
      expect(shownText(resumed)).toMatch(/^Tool publish_note returned \{"published":true/);

      const run = await (await fetch(`${a!.base}/runs/${input.runId}`)).json();
      expect(run.approvals).toEqual([
        { toolCallId, toolName: 'publish_note', approved: true, by: 'anonymous', at: expect.any(String) },
      ]);
      expect(run.interrupts).toBeUndefined();
      const stored = await messages(a, input.threadId);
      expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);

      // Answered once: the same answer again is refused before any stream, as is an unknown interrupt.
      const again = await resume(a, input.threadId, interruptId, true).response;
      expect(again.status).toBe(409);
      expect(await again.json()).toMatchObject({ code: 'INTERRUPT_ALREADY_RESOLVED' });
      const unknown = await resume(a, input.threadId, 'no-such-interrupt', true).response;
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ code: 'NOT_FOUND' });
    });

    test('pre-1.0: a plain RUN_FINISHED, the interrupt on the run record; declined on the other instance, the model is told', async () => {
      const { input, frames, toolCallId } = await interruptedOn(b);
      expect(finished(frames).outcome).toBeUndefined();
      const run = await (await fetch(`${b!.base}/runs/${input.runId}`)).json();
      expect(run.interrupts).toEqual([
        expect.objectContaining({ id: expect.any(String), reason: 'tool_approval', toolCallId }),
      ]);
      const { body, response } = resume(a, input.threadId, run.interrupts[0].id, false, {
        protocolVersion: undefined,
      });
      const res = await response;
      expect(res.status).toBe(200);
      const resumed = await (await readRun(res)).done;
      assertStreamRules(resumed, body);
      const result = resumed.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
      expect(JSON.parse(result.content)).toMatchObject({ approved: false });
      expect(shownText(resumed)).toContain('Tool publish_note returned {"approved":false');
      const after = await (await fetch(`${b!.base}/runs/${input.runId}`)).json();
      expect(after.approvals).toEqual([
        { toolCallId, toolName: 'publish_note', approved: false, by: 'anonymous', at: expect.any(String) },
      ]);
    });

    test('an expired interrupt is a 410 INTERRUPT_EXPIRED before any stream, on either instance; the thread goes on', async () => {
      const { input, frames, toolCallId } = await interruptedOn(a, '1.0');
      const [interrupt] = finished(frames).outcome.interrupts;
      // APPROVAL_TTL_MS (a day) later: the expiry moves into the past in the database both instances share.
      const db = new Client({ connectionString: process.env.E2E_DATABASE_URL });
      await db.connect();
      try {
        const moved = await db.query(
          `UPDATE run_interrupts SET expires_at = now() - interval '1 second' WHERE id = $1 AND tool_call_id = $2`,
          [interrupt.id, toolCallId],
        );
        expect(moved.rowCount).toBe(1);
      } finally {
        await db.end();
      }
      for (const [s, approved] of [
        [a, true],
        [b, false],
      ] as const) {
        const res = await resume(s, input.threadId, interrupt.id, approved).response;
        expect(res.status).toBe(410);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await res.json()).toMatchObject({ statusCode: 410, code: 'INTERRUPT_EXPIRED' });
      }
      // Nobody answered it and the tool never ran.
      const run = await (await fetch(`${b!.base}/runs/${input.runId}`)).json();
      expect(run.approvals ?? []).toEqual([]);
      expect((await messages(b, input.threadId)).map((m) => m.role)).toEqual(['user', 'assistant']);
      // The refused answers left the thread free: the next message runs.
      const next: Input = runInput('hi', { threadId: input.threadId, protocolVersion: '1.0' });
      next.forwardedProps = memoryOf(input.threadId);
      const after = await runToFrames(runUrl(b), next);
      expect(after.res.status).toBe(200);
      assertStreamRules(after.frames, next);
      expect(finished(after.frames)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    });

    test('a resume that is not a valid answer is a 400 before any stream', async () => {
      const res = await postRun(runUrl(a), {
        ...runInput('hi'),
        resume: [{ interruptId: 'x', status: 'maybe' }],
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    });
  });

  describe('the defects io.Assist templates found', () => {
    test('Stop, then send at once on the same thread: 50 × 200', async () => {
      const threadId = uid('thread');
      const statuses: number[] = [];
      let stop: AbortController | undefined;
      for (let i = 0; i < 50; i++) {
        const body = {
          ...runInput(`/slow 50 turn ${i} of the stop and send loop`),
          threadId,
          forwardedProps: memoryOf(threadId),
        };
        stop?.abort();
        const controller = new AbortController();
        const res = await postRun(runUrl(b), body, { signal: controller.signal });
        statuses.push(res.status);
        if (res.status !== 200) {
          process.stderr.write(`turn ${i}: ${res.status} ${await res.text()}\n`);
          continue;
        }
        const reader = res.body!.getReader();
        let seen = '';
        while (!seen.includes('TEXT_MESSAGE_CONTENT'))
          seen += new TextDecoder().decode((await reader.read()).value);
        stop = controller;
      }
      stop?.abort();
      expect(statuses).toEqual(new Array(50).fill(200));
    }, 120_000);

    test('concurrent claims of one thread never surface the position key: each is 200 or 409 THREAD_BUSY', async () => {
      const threadId = uid('thread');
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          postRun(runUrl(i % 2 ? a : b), {
            ...runInput(`hello ${i}`),
            threadId,
            forwardedProps: memoryOf(threadId),
          }).then(async (res) => ({ status: res.status, body: await res.text() })),
        ),
      );
      for (const { status, body } of answers) {
        if (status !== 200) expect(JSON.parse(body)).toMatchObject({ statusCode: 409, code: 'THREAD_BUSY' });
      }
      expect(answers.some((x) => x.status === 200)).toBe(true);
    });

    test('POST /threads with resourceId in the body files the thread under that owner', async () => {
      const id = uid('thread');
      const res = await fetch(`${b!.base}/threads`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id, resourceId: 'owner-x', title: 't' }),
      });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ id, resourceId: 'owner-x' });
      const listed = await (await fetch(`${b!.base}/threads?resourceId=owner-x`)).json();
      expect(listed.threads.map((t: { id: string }) => t.id)).toContain(id);
    });

    test('MCP-style tool names round trip: on the wire and in storage as the client named them', async () => {
      const tools = ['portal.get_positions', 'files/read'].map((name) => ({ name, description: 'x' }));
      const input: Input = runInput('/tool portal.get_positions {}\n/tool files/read {"path":"/a"}', {
        tools,
        protocolVersion: '1.0',
      });
      input.forwardedProps = { ...memoryOf(input.threadId), clientProtocol: 'ag-ui' };
      const { res, frames } = await runToFrames(runUrl(b), input);
      expect(res.status).toBe(200);
      assertStreamRules(frames, input);
      const starts = frames.filter((f) => f.event.type === 'TOOL_CALL_START').map((f) => f.event);
      expect(starts.map((s) => s.toolCallName)).toEqual(['portal.get_positions', 'files/read']);
      expect(JSON.stringify(frames)).not.toMatch(/portal_get_positions_|files_read_/);
      const results = starts.map((s) => ({
        id: uid('tool'),
        role: 'tool',
        toolCallId: s.toolCallId,
        content: `r-${s.toolCallName}`,
      }));
      const next = {
        ...runInput('', { tools, protocolVersion: '1.0' }),
        threadId: input.threadId,
        messages: results,
        forwardedProps: { ...memoryOf(input.threadId), clientProtocol: 'ag-ui' },
      };
      const second = await runToFrames(runUrl(b), next);
      assertStreamRules(second.frames, next);
      // The model knows them by their aliases; the client never sees those.
      expect(shownText(second.frames)).toMatch(
        /^Tool portal_get_positions_[0-9a-f]{6} returned "r-portal.get_positions"\nTool files_read_[0-9a-f]{6} returned "r-files\/read"$/,
      );
      const stored = await messages(b, input.threadId);
      expect(stored[1].toolCalls.map((c: any) => c.function.name)).toEqual([
        'portal.get_positions',
        'files/read',
      ]);
    });

    test('a user message with content parts reaches the model, is stored and replayed', async () => {
      const input: Input = runInput('', { protocolVersion: '1.0' });
      input.messages = [
        {
          id: uid('msg'),
          role: 'user',
          content: [
            { type: 'text', text: 'what is this' },
            { type: 'image', source: { type: 'data', value: 'iVBORw0KGgo=', mimeType: 'image/png' } },
            {
              type: 'document',
              source: { type: 'url', value: 'https://example.com/a.pdf', mimeType: 'application/pdf' },
            },
          ],
        } as any,
      ];
      input.forwardedProps = memoryOf(input.threadId);
      const { frames } = await runToFrames(runUrl(a), input);
      assertStreamRules(frames, input);
      expect(shownText(frames)).toBe(
        'You said: what is this [with file image/png 8 bytes; file application/pdf https://example.com/a.pdf]',
      );
      const stored = await messages(a, input.threadId);
      expect(stored[0].content).toEqual((input.messages[0] as any).content);
      const replay = {
        ...runInput('/history'),
        threadId: input.threadId,
        forwardedProps: memoryOf(input.threadId),
      };
      const again = await runToFrames(runUrl(a), replay);
      expect(shownText(again.frames).split('\n')[0]).toBe(
        'user: what is this [file image/png 8 bytes] [file application/pdf https://example.com/a.pdf]',
      );
    });
  });
});
