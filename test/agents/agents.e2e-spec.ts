import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { db, endedRunRow, eventually, startApp, storedTitle, TestApp } from '../support/app';
import { LEVEL, LogLine, serviceLogs } from '../support/log-sink';
import { startOpenAiServer } from '../support/openai-server';
import {
  memoryOf,
  postRun,
  postRunUntilText,
  runInput,
  runToFrames,
  shownText,
  types,
  uid,
} from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

describe('agents and forwardedProps', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('lists the agents and reads one in the Agent shape; an unknown id is 404', async () => {
    const list = await (await fetch(`${t.baseUrl}/io-bridge/agents`)).json();
    expect(list.defaultAgentId).toBe('assistant');
    expect(list.agents.map((a: { id: string }) => a.id)).toEqual(['assistant', 'calculator']);
    const one = await (await fetch(`${t.baseUrl}/io-bridge/agents/assistant`)).json();
    expect(one).toEqual({
      id: 'assistant',
      name: 'Assistant',
      description: expect.any(String),
      modelId: 'scripted',
      tools: [
        { name: 'current_time', description: expect.stringContaining('IANA') },
        { name: 'calculate', description: expect.stringContaining('arithmetic') },
        { name: 'publish_note', description: expect.stringContaining('approve'), requiresApproval: true },
      ],
      capabilities: { frontendTools: true, structuredOutput: true, memory: true },
    });
    expect(list.agents[0]).toEqual(one);
    const missing = await fetch(`${t.baseUrl}/io-bridge/agents/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('runs the agent forwardedProps.agentId names, with its own instructions', async () => {
    const input = runInput('/context', { forwardedProps: { agentId: 'calculator' } });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(shownText(frames)).toContain('You only do arithmetic.');
    const row = await db((c) => c.query('SELECT agent_id FROM runs WHERE id = $1', [input.runId]));
    expect(row.rows[0].agent_id).toBe('calculator');
  });

  it('passes run-input context entries to the model', async () => {
    const input = runInput('/context', { context: [{ description: 'User locale', value: 'fr-FR' }] });
    const { frames } = await runToFrames(t.runUrl, input);
    expect(shownText(frames)).toContain('Context provided by the application:\n- User locale: fr-FR');
  });

  it('validates modelSettings, clamps them to the ceilings, and they reach the model', async () => {
    const input = runInput('/settings', {
      forwardedProps: {
        modelSettings: { maxTokens: 10_000_000, temperature: 7, topP: 0.5, topK: 40, maxRetries: 99 },
      },
    });
    const { frames } = await runToFrames(t.runUrl, input);
    expect(JSON.parse(shownText(frames))).toEqual({
      maxOutputTokens: 16384,
      temperature: 2,
      topP: 0.5,
      topK: 40,
    });
    const defaults = await runToFrames(
      t.runUrl,
      runInput('/settings', { forwardedProps: { agentId: 'calculator' } }),
    );
    expect(JSON.parse(shownText(defaults.frames))).toEqual({ temperature: 0 });
    for (const modelSettings of [{ temperature: 'hot' }, { maxTokens: 1.5 }, 'x']) {
      const res = await postRun(t.runUrl, runInput('/settings', { forwardedProps: { modelSettings } }));
      expect(res.status).toBe(400);
      expect((await res.json()).details[0].path).toMatch(/^forwardedProps\.modelSettings/);
    }
  });

  it('modelSettings.maxTokens bounds the answer: /bench 1000 with maxTokens 5 shows five deltas and finishes', async () => {
    const input = runInput('/bench 1000', { forwardedProps: { modelSettings: { maxTokens: 5 } } });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(shownText(frames)).toBe('x '.repeat(5));
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });

  it('memoryOptions.lastMessages trims the history the model sees; the io.Assist memory form works too', async () => {
    const threadId = uid('trim');
    for (const [i, text] of ['a', 'b', 'c'].entries()) {
      await runToFrames(t.runUrl, {
        ...runInput(text),
        threadId,
        messages: [{ id: `m${i}`, role: 'user', content: text }],
        forwardedProps: memoryOf(threadId),
      });
    }
    const trimmed = await runToFrames(t.runUrl, {
      ...runInput('/history', { forwardedProps: { memoryOptions: { lastMessages: 2 } } }),
      threadId,
    });
    expect(shownText(trimmed.frames).split('\n')).toEqual([
      'user: c',
      'assistant: You said: c',
      'user: /history',
    ]);
    // memory.resource names the owner: the runs above, naming none, stored the thread under anonymous.
    const ioAssist = await runToFrames(t.runUrl, {
      ...runInput('/history', {
        forwardedProps: { memory: { thread: threadId, resource: 'anonymous', options: { lastMessages: 1 } } },
      }),
      threadId,
    });
    // One stored message (the last answer) and the new one; Mastra puts a "." user turn before an assistant-first history.
    const seen = shownText(ioAssist.frames).split('\n');
    expect(seen.filter((l) => l.startsWith('assistant: '))).toHaveLength(1);
    expect(seen.filter((l) => l.startsWith('user: ') && l !== 'user: .')).toEqual(['user: /history']);
    const none = await runToFrames(t.runUrl, {
      ...runInput('/history', { forwardedProps: { memoryOptions: { lastMessages: 0 } } }),
      threadId,
    });
    expect(shownText(none.frames)).toBe('user: /history');
  });

  it('memoryOptions.readOnly reads the history but stores nothing of the run', async () => {
    const threadId = uid('ro');
    await runToFrames(t.runUrl, { ...runInput('first'), threadId, forwardedProps: memoryOf(threadId) });
    const before = await db((c) =>
      c.query('SELECT count(*)::int AS n FROM mastra_messages WHERE thread_id = $1', [threadId]),
    );
    const { frames } = await runToFrames(t.runUrl, {
      ...runInput('/history', { forwardedProps: { memoryOptions: { readOnly: true } } }),
      threadId,
    });
    expect(shownText(frames)).toBe('user: first\nassistant: You said: first\nuser: /history');
    const after = await db((c) =>
      c.query('SELECT count(*)::int AS n FROM mastra_messages WHERE thread_id = $1', [threadId]),
    );
    expect(after.rows[0].n).toBe(before.rows[0].n);
    expect(before.rows[0].n).toBe(2);
  });

  it('memoryOptions.generateTitle asks the model for the thread title', async () => {
    const threadId = uid('title');
    await runToFrames(t.runUrl, {
      ...runInput('please plan a trip to Lyon next spring with friends'),
      threadId,
      forwardedProps: { memoryOptions: { generateTitle: true } },
    });
    const title = await eventually(async () => {
      return db((c) => storedTitle(c, threadId));
    });
    expect(title).toBe('please plan a trip to Lyon');
  });

  describe('structuredOutput', () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

    it('finishes with the validated object as the result when the answer matches the schema', async () => {
      const input = runInput('/json {"city":"Lyon"}', { forwardedProps: { structuredOutput: { schema } } });
      const { frames } = await runToFrames(t.runUrl, input);
      assertStreamRules(frames, input);
      expect(shownText(frames)).toBe('{"city":"Lyon"}');
      expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED', result: { city: 'Lyon' } });
    });

    it('ends with RUN_ERROR STRUCTURED_OUTPUT_INVALID when it does not', async () => {
      const input = runInput('/json {"town":"Lyon"}', { forwardedProps: { structuredOutput: { schema } } });
      const { frames } = await runToFrames(t.runUrl, input);
      assertStreamRules(frames, input);
      expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'STRUCTURED_OUTPUT_INVALID' });
      const row = await db((c) =>
        c.query('SELECT status, error_code FROM runs WHERE id = $1', [input.runId]),
      );
      expect(row.rows[0]).toEqual({ status: 'error', error_code: 'STRUCTURED_OUTPUT_INVALID' });
    });

    it('refuses a schema that is not a JSON Schema with 400', async () => {
      const res = await postRun(
        t.runUrl,
        runInput('x', { forwardedProps: { structuredOutput: { schema: { type: 7 } } } }),
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        details: [{ path: 'forwardedProps.structuredOutput.schema' }],
      });
    });
  });

  it('tolerates unknown forwardedProps keys', async () => {
    const input = runInput('hi', {
      forwardedProps: { theme: 'dark', nested: { deep: [1, 2] }, agentId: 'assistant' },
    });
    const { res, frames } = await runToFrames(t.runUrl, input);
    expect(res.status).toBe(200);
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
  });
});

describe('operator overrides of an agent', () => {
  it('takes model and instructions from AGENTS_CONFIG, and environment variables win', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agents-config-'));
    const file = join(dir, 'agents.json');
    writeFileSync(
      file,
      JSON.stringify({
        calculator: { instructions: 'From the file.' },
        assistant: { instructions: 'File loses.' },
      }),
    );
    const t = await startApp({ AGENTS_CONFIG: file, AGENT_ASSISTANT_INSTRUCTIONS: 'From the environment.' });
    try {
      const calc = await runToFrames(
        t.runUrl,
        runInput('/context', { forwardedProps: { agentId: 'calculator' } }),
      );
      expect(shownText(calc.frames)).toBe('From the file.');
      const assistant = await runToFrames(t.runUrl, runInput('/context'));
      expect(shownText(assistant.frames)).toBe('From the environment.');
    } finally {
      await t.close();
    }
  });

  it('refuses to boot on a bad override file, naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agents-config-'));
    const file = join(dir, 'agents.json');
    writeFileSync(file, JSON.stringify({ nobody: { model: 'x' } }));
    const bootFailed = (l: LogLine) => l.context === 'ExceptionHandler';
    const withdraw = serviceLogs.expect(bootFailed);
    try {
      await expect(startApp({ AGENTS_CONFIG: file })).rejects.toThrow(/AGENTS_CONFIG/);
    } finally {
      withdraw();
    }
    expect(serviceLogs.take(bootFailed)).toEqual([
      expect.objectContaining({
        level: LEVEL.error,
        msg: expect.stringMatching(
          /^Invalid configuration: AGENTS_CONFIG \S+agents\.json: agent 'nobody', field 'model': must be/,
        ),
      }),
    ]);
  });
});

describe('a real provider: an OpenAI-compatible server over HTTP', () => {
  let server: Awaited<ReturnType<typeof startOpenAiServer>>;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer((req) => {
      const last = req.messages[req.messages.length - 1];
      const text = typeof last.content === 'string' ? last.content : '';
      if (last.role === 'tool')
        return { text: ['The answer is ', JSON.parse(last.content).result.toString()] };
      if (text.includes('fail')) return { status: 500, error: 'upstream exploded' };
      if (text.includes('hang')) return { hang: 'Thinking' };
      if (text.includes('compute'))
        return { toolCalls: [{ id: 'call_1', name: 'calculate', arguments: '{"expression":"6*7"}' }] };
      return { text: ['Hello', ' from', ' the', ' provider'] };
    });
    t = await startApp({
      MODEL: 'local/test-model',
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it("aborts the provider's request when the client disconnects", async () => {
    const input = runInput('please hang');
    const client = await postRunUntilText(t.runUrl, input);
    expect(server.closedEarly()).toBe(0);
    client.abort();
    await eventually(() => Promise.resolve(server.closedEarly() === 1 ? true : undefined));
    expect((await endedRunRow(input.runId))?.status).toBe('cancelled');
  });

  it('streams text from the provider', async () => {
    const input = runInput('hi', { forwardedProps: { modelSettings: { temperature: 0.3, maxTokens: 50 } } });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(shownText(frames)).toBe('Hello from the provider');
    const request = server.requests.at(-1)!;
    expect(request).toMatchObject({ model: 'test-model', temperature: 0.3, max_tokens: 50 });
    expect(request.messages.at(-1)).toEqual({ role: 'user', content: 'hi' });
    const agents = await (await fetch(`${t.baseUrl}/io-bridge/agents/assistant`)).json();
    expect(agents.modelId).toBe('local/test-model');
  });

  it('runs a tool call the provider makes, then streams its answer', async () => {
    const input = runInput('please compute');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    const result = frames.find((f) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ expression: '6*7', result: 42 });
    const args = frames
      .filter((f) => f.event.type === 'TOOL_CALL_ARGS')
      .map((f) => f.event.delta)
      .join('');
    expect(JSON.parse(args)).toEqual({ expression: '6*7' });
    expect(shownText(frames)).toBe('The answer is 42');
  });

  it("turns a provider's 500 into RUN_ERROR MODEL_UNAVAILABLE, without the provider's words", async () => {
    const input = runInput('please fail', { forwardedProps: { modelSettings: { maxRetries: 0 } } });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_UNAVAILABLE' });
    expect(frames.at(-1)!.event.message).not.toMatch(/upstream exploded/);
  });
});
