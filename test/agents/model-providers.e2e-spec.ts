import { spawn } from 'node:child_process';
import {
  db,
  endedRunRow,
  eventually,
  runRow,
  startApp,
  storedMessages,
  storedTitle,
  TestApp,
} from '../support/app';
import { MAIN } from '../support/built-service';
import { promptTokens, startOpenAiServer, OpenAiServer, Reply } from '../support/openai-server';
import { startReceiver } from '../support/otlp-receiver';
import { TestIdp } from '../support/oidc';
import { Frame, memoryOf, parseFrames, postRun, runInput, runToFrames, shownText, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const terminal = (frames: Frame[]) => frames.at(-1)!.event;
const scrape = async (t: TestApp) => (await fetch(`${t.baseUrl}/metrics`)).text();
const metric = (text: string, line: string) => {
  const escaped = line.replace(/[{}]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
};
const runView = async (t: TestApp, runId: string) =>
  (await fetch(`${t.baseUrl}/io-bridge/runs/${runId}`)).json() as Promise<Record<string, any>>;

/** A run stored in a thread of its own (memory names the thread the run is on). */
const storedRun = (text: string, extra: Record<string, unknown> = {}) => {
  const input = runInput(text, extra);
  return { ...input, forwardedProps: { ...memoryOf(input.threadId), ...(extra.forwardedProps as object) } };
};

const CALC = { id: 'call_1', name: 'calculate', arguments: '{"expression":"6*7"}' };
const LABELS = 'agent="assistant",model="openai/gpt-test"';

describe('a provider speaking OpenAI chat completions: usage, retries, error codes', () => {
  let server: OpenAiServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ text: ['Hello', ' there'] }));
    t = await startApp({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      MODEL_RETRY_BACKOFF_MS: '1',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('asks for usage, and puts the exact usage on RUN_FINISHED (1.x), the run record and the token metric', async () => {
    const before = await scrape(t);
    server.enqueue({ text: ['Hi', ' you'], usage: { prompt: 17, completion: 5, cached: 3, reasoning: 2 } });
    const input = runInput('hi', { protocolVersion: '1.0' });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(server.requests.at(-1)!.stream_options).toEqual({ include_usage: true });
    const usage = [
      {
        provider: 'openai',
        model: 'gpt-test',
        inputTokens: 17,
        outputTokens: 5,
        totalTokens: 22,
        reasoningTokens: 2,
        cachedInputTokens: 3,
      },
    ];
    expect(terminal(frames)).toMatchObject({ type: 'RUN_FINISHED', usage });
    expect((await runView(t, input.runId)).usage).toEqual(usage);
    const after = await scrape(t);
    expect(metric(after, `io_bridge_model_tokens_total{${LABELS},kind="input"}`)).toBe(
      metric(before, `io_bridge_model_tokens_total{${LABELS},kind="input"}`) + 17,
    );
    expect(metric(after, `io_bridge_model_tokens_total{${LABELS},kind="output"}`)).toBe(
      metric(before, `io_bridge_model_tokens_total{${LABELS},kind="output"}`) + 5,
    );
  });

  it('sums the calls of a run (a tool call, then the answer); a pre-1.0 request sees no usage, the record keeps it', async () => {
    server.enqueue(
      { toolCalls: [CALC], usage: { prompt: 10, completion: 4 } },
      { text: ['The answer is 42'], usage: { prompt: 20, completion: 6 } },
    );
    const input = storedRun('please compute');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    // The arguments came in fragments after the call's index, id and name; the client sees them whole.
    const args = frames.filter((f) => f.event.type === 'TOOL_CALL_ARGS').map((f) => f.event.delta);
    expect(JSON.parse(args.join(''))).toEqual({ expression: '6*7' });
    expect(shownText(frames)).toBe('The answer is 42');
    expect(terminal(frames).type).toBe('RUN_FINISHED');
    expect(terminal(frames).usage).toBeUndefined();
    expect((await runView(t, input.runId)).usage).toEqual([
      { provider: 'openai', model: 'gpt-test', inputTokens: 30, outputTokens: 10, totalTokens: 40 },
    ]);
  });

  it('two 429s in a row on each call (retry-after: 1): the run still succeeds; retries are counted', async () => {
    const before = await scrape(t);
    const limited: Reply = {
      status: 429,
      error: 'Rate limit reached for requests',
      retryAfter: 1,
      code: 'rate_limit_exceeded',
      type: 'requests',
    };
    server.enqueue(limited, limited, { toolCalls: [CALC] }, limited, limited, { text: ['The answer is 42'] });
    const sent = server.requests.length;
    const input = runInput('please compute', { protocolVersion: '1.0' });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(terminal(frames).type).toBe('RUN_FINISHED');
    expect(shownText(frames)).toBe('The answer is 42');
    expect(server.requests.length - sent).toBe(6);
    const after = await scrape(t);
    const retries = `io_bridge_model_retries_total{${LABELS},code="MODEL_RATE_LIMITED"}`;
    expect(metric(after, retries)).toBe(metric(before, retries) + 4);
  });

  it('retries a 500 and a connection dropped before any byte; after MODEL_RETRIES (2) it is MODEL_UNAVAILABLE with a safe message', async () => {
    server.enqueue({ status: 500, error: 'upstream exploded at db-7.internal' }, { drop: 'before-headers' });
    const first = runInput('hi');
    const recovered = await runToFrames(t.runUrl, first);
    expect(terminal(recovered.frames).type).toBe('RUN_FINISHED');

    const before = await scrape(t);
    const sent = server.requests.length;
    const failing: Reply = { status: 500, error: 'upstream exploded at db-7.internal' };
    server.enqueue(failing, failing, failing);
    const input = storedRun('hi');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(server.requests.length - sent).toBe(3);
    expect(terminal(frames)).toEqual({
      type: 'RUN_ERROR',
      timestamp: expect.any(Number),
      code: 'MODEL_UNAVAILABLE',
      message: 'The model provider is unavailable; try again later',
    });
    expect(await endedRunRow(input.runId)).toMatchObject({
      status: 'error',
      error_code: 'MODEL_UNAVAILABLE',
    });
    const after = await scrape(t);
    const errors = `io_bridge_model_errors_total{${LABELS},code="MODEL_UNAVAILABLE"}`;
    expect(metric(after, errors)).toBe(metric(before, errors) + 1);
  });

  it('a client may ask for no retries (modelSettings.maxRetries 0): one 429 ends the run MODEL_RATE_LIMITED', async () => {
    server.enqueue({ status: 429, error: 'Rate limit reached', retryAfter: 0 });
    const sent = server.requests.length;
    const input = runInput('hi', { forwardedProps: { modelSettings: { maxRetries: 0 } } });
    const { frames } = await runToFrames(t.runUrl, input);
    expect(server.requests.length - sent).toBe(1);
    expect(terminal(frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_RATE_LIMITED' });
    expect(terminal(frames).message).not.toMatch(/Rate limit reached/);
  });

  it('a connection dropped after content is not retried: RUN_ERROR MODEL_UNAVAILABLE, the text closed and stored', async () => {
    server.enqueue({ drop: 'mid-stream', text: ['Half', ' an'] });
    const sent = server.requests.length;
    const input = storedRun('hi');
    const threadId = input.threadId;
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(server.requests.length - sent).toBe(1);
    expect(shownText(frames)).toBe('Half an');
    expect(terminal(frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_UNAVAILABLE' });
    const stored = await db((c) => storedMessages(c, threadId));
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(stored[1].content).toBe('Half an');
  });

  it('a context-length error is MODEL_CONTEXT_TOO_LONG, not retried; another 400 is MODEL_ERROR without the provider text', async () => {
    server.enqueue({ contextLength: true });
    let sent = server.requests.length;
    const long = await runToFrames(t.runUrl, runInput('hi'));
    expect(server.requests.length - sent).toBe(1);
    expect(terminal(long.frames)).toEqual({
      type: 'RUN_ERROR',
      timestamp: expect.any(Number),
      code: 'MODEL_CONTEXT_TOO_LONG',
      message: 'The conversation is too long for the model; start a new thread',
    });

    server.enqueue({
      status: 400,
      error: "Invalid value for 'temperature' at sk-live-abc",
      type: 'invalid_request_error',
    });
    sent = server.requests.length;
    const bad = await runToFrames(t.runUrl, runInput('hi'));
    expect(server.requests.length - sent).toBe(1);
    expect(terminal(bad.frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_ERROR' });
    expect(terminal(bad.frames).message).not.toMatch(/temperature|sk-live/);
  });

  it('a failure after a first call reports that call on RUN_ERROR (1.x)', async () => {
    const failing: Reply = { status: 503, error: 'overloaded' };
    server.enqueue({ toolCalls: [CALC], usage: { prompt: 9, completion: 3 } }, failing, failing, failing);
    const input = runInput('please compute', { protocolVersion: '1.0' });
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(terminal(frames)).toMatchObject({
      type: 'RUN_ERROR',
      code: 'MODEL_UNAVAILABLE',
      usage: [{ provider: 'openai', model: 'gpt-test', inputTokens: 9, outputTokens: 3, totalTokens: 12 }],
    });
    expect((await runView(t, input.runId)).usage).toEqual(terminal(frames).usage);
  });

  it('measures time to first token and call durations', async () => {
    const before = await scrape(t);
    await runToFrames(t.runUrl, runInput('hi'));
    const after = await scrape(t);
    const firstToken = `io_bridge_model_time_to_first_token_seconds_count{${LABELS}}`;
    const calls = `io_bridge_model_call_duration_seconds_count{${LABELS},outcome="ok"}`;
    expect(metric(after, firstToken)).toBe(metric(before, firstToken) + 1);
    expect(metric(after, calls)).toBe(metric(before, calls) + 1);
  });
  it("counts the thread title's call like the run's: the run's usage and budget tokens grow, and the metric", async () => {
    const before = await scrape(t);
    server.enqueue({ text: ['Lyon', ' is', ' lovely'], usage: { prompt: 17, completion: 5 } });
    server.enqueue({ text: ['Trip to Lyon'], usage: { prompt: 9, completion: 3 } });
    const input = storedRun('please plan a trip to Lyon', {
      forwardedProps: { memoryOptions: { generateTitle: true } },
    });
    const { frames } = await runToFrames(t.runUrl, input);
    expect(terminal(frames)).toMatchObject({ type: 'RUN_FINISHED' });
    const row = await eventually(async () => {
      const r = await db((c) => c.query('SELECT usage, tokens FROM runs WHERE id = $1', [input.runId]));
      return Number(r.rows[0]?.tokens) === 34 ? r.rows[0] : undefined;
    });
    expect(row.usage).toEqual([
      { provider: 'openai', model: 'gpt-test', inputTokens: 26, outputTokens: 8, totalTokens: 34 },
    ]);
    const title = await db((c) => storedTitle(c, input.threadId));
    expect(title).toBe('Trip to Lyon');
    const after = await scrape(t);
    expect(metric(after, `io_bridge_model_tokens_total{${LABELS},kind="input"}`)).toBe(
      metric(before, `io_bridge_model_tokens_total{${LABELS},kind="input"}`) + 26,
    );
  });
});

describe('a provider that hangs or cannot be reached', () => {
  let server: OpenAiServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ silent: true }));
    t = await startApp({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      MODEL_RETRIES: '0',
      MODEL_FIRST_TOKEN_TIMEOUT_MS: '400',
      MODEL_IDLE_TIMEOUT_MS: '400',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  it('no byte at all: MODEL_TIMEOUT after the first-token timeout, and the request is abandoned', async () => {
    const closed = server.closedEarly();
    const input = runInput('hi');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(terminal(frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_TIMEOUT' });
    expect(server.closedEarly()).toBe(closed + 1);
  });

  it('silence mid-stream: MODEL_TIMEOUT after the idle timeout, with the text shown closed', async () => {
    server.enqueue({ hang: 'Thinking' });
    const input = runInput('hi');
    const { frames } = await runToFrames(t.runUrl, input);
    assertStreamRules(frames, input);
    expect(shownText(frames)).toBe('Thinking');
    expect(terminal(frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_TIMEOUT' });
  });

  it('a server nobody listens on: MODEL_UNAVAILABLE, the message naming no host', async () => {
    const dead = await startOpenAiServer(() => ({ text: ['unused'] }));
    const url = dead.url;
    await dead.close();
    const app = await startApp({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: url,
      MODEL_RETRIES: '1',
      MODEL_RETRY_BACKOFF_MS: '1',
    });
    try {
      const { frames } = await runToFrames(app.runUrl, runInput('hi'));
      expect(terminal(frames)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_UNAVAILABLE' });
      expect(terminal(frames).message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|fetch/);
    } finally {
      await app.close();
    }
  });
});

describe('model calls in traces', () => {
  it("sets gen_ai.usage.* on the chat span; a failed call's span is an error with the code, the retries its events", async () => {
    const receiver = await startReceiver();
    const server = await startOpenAiServer(() => ({ text: ['ok'] }));
    const t = await startApp({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      MODEL_RETRY_BACKOFF_MS: '1',
    });
    try {
      server.enqueue(
        { status: 429, error: 'slow down', retryAfter: 0 },
        { text: ['ok'], usage: { prompt: 12, completion: 2 } },
      );
      expect(terminal((await runToFrames(t.runUrl, runInput('first'))).frames).type).toBe('RUN_FINISHED');
      const failing: Reply = { status: 502, error: 'bad gateway from lb-3.internal' };
      server.enqueue(failing, failing, failing);
      expect(terminal((await runToFrames(t.runUrl, runInput('second'))).frames).code).toBe(
        'MODEL_UNAVAILABLE',
      );
    } finally {
      await t.close();
      await server.close();
      await receiver.close();
    }
    const chats = receiver.spans.filter((s) => s.name === 'chat gpt-test');
    expect(chats).toHaveLength(2);
    const ok = chats.find((s) => s.status?.code !== 2)!;
    const failed = chats.find((s) => s.status?.code === 2)!;
    expect(ok.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 2 });
    expect(ok.events?.map((e) => e.name)).toEqual(['retry']);
    expect(failed.status?.code).toBe(2 /* ERROR */);
    expect(failed.attributes['error.type']).toBe('MODEL_UNAVAILABLE');
    expect(failed.status?.message).toMatch(/502/);
    // The run's span carries its total over the calls.
    const runs = receiver.spans.filter((s) => s.name === 'run assistant');
    expect(runs.map((s) => s.attributes['gen_ai.usage.input_tokens'])).toContain(12);
  });
});

describe('start-up with a model nobody serves', () => {
  const start = (env: Record<string, string>) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN], {
        env: {
          ...process.env,
          PORT: '0',
          LOG_LEVEL: 'warn',
          DATABASE_URL: process.env.E2E_DATABASE_URL!,
          OPENAI_API_KEY: 'sk-test',
          ...env,
        },
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });

  it.each([
    ['an unknown provider', 'foo/bar', /^Invalid configuration: MODEL: 'foo\/bar' names no provider/],
    [
      'a model its provider does not know',
      'openai/gpt-nope',
      /^Invalid configuration: MODEL: openai has no model 'gpt-nope'/,
    ],
  ])('%s: the service exits with one line naming MODEL', async (_what, model, line) => {
    const { code, output } = await start({ MODEL: model });
    expect(code).toBe(1);
    const lines = output.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
  });
});

describe('token budgets per owner, and usage reports', () => {
  let idp: TestIdp;
  let server: OpenAiServer;
  let t: TestApp;
  const alice = uid('alice');
  const bob = uid('bob');
  const operator = uid('operator');
  const bearer = async (sub: string, roles: string[] = []) => ({
    authorization: `Bearer ${await idp.sign({ sub, realm_access: { roles } })}`,
  });
  const api = async (path: string, sub: string, init: RequestInit = {}, roles: string[] = []) =>
    fetch(`${t.baseUrl}/io-bridge${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...(await bearer(sub, roles)) },
    });
  const run = async (sub: string, input: Record<string, unknown>) => {
    const res = await postRun(t.runUrl, input, {
      headers: { 'content-type': 'application/json', ...(await bearer(sub)) },
    });
    const raw = await res.text();
    return { res, frames: res.ok ? parseFrames(raw).frames : [], body: res.ok ? undefined : JSON.parse(raw) };
  };

  beforeAll(async () => {
    idp = await TestIdp.start();
    server = await startOpenAiServer(() => ({ text: ['ok'], usage: { prompt: 30, completion: 10 } }));
    t = await startApp({
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: idp.issuer,
      OIDC_AUDIENCE: idp.audience,
      ADMIN_ROLE_CLAIM: 'realm_access.roles',
      ADMIN_ROLE: 'io-admin',
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      TOKEN_BUDGET_PER_OWNER: '100',
      TOKEN_BUDGET_WINDOW: '1d',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
    await idp.close();
  });

  it("only an operator sets an owner's budget", async () => {
    const body = JSON.stringify({ tokens: 50 });
    expect((await api(`/admin/quotas/${alice}`, alice, { method: 'PUT', body })).status).toBe(403);
    const bad = await api(`/admin/quotas/${alice}`, operator, { method: 'PUT', body: '{"tokens":-1}' }, [
      'io-admin',
    ]);
    expect(bad.status).toBe(400);
    const set = await api(`/admin/quotas/${alice}`, operator, { method: 'PUT', body }, ['io-admin']);
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ resourceId: alice, tokens: 50, window: '1d' });
  });

  it('a run that crosses the budget ends after that step with RUN_ERROR QUOTA_EXCEEDED; the next is refused before streaming', async () => {
    // 40 of 50: the first run finishes.
    expect(terminal((await run(alice, runInput('hi'))).frames).type).toBe('RUN_FINISHED');
    // 40 spent; this run's first step brings it to 80: it ends there, its tool call never runs.
    server.enqueue({ toolCalls: [CALC], usage: { prompt: 30, completion: 10 } });
    const sent = server.requests.length;
    const input = storedRun('please compute', { protocolVersion: '1.0' });
    const crossing = await run(alice, input);
    assertStreamRules(crossing.frames, input);
    expect(server.requests.length - sent).toBe(1);
    expect(crossing.frames.some((f) => f.event.type === 'TOOL_CALL_RESULT')).toBe(false);
    expect(terminal(crossing.frames)).toMatchObject({
      type: 'RUN_ERROR',
      code: 'QUOTA_EXCEEDED',
      usage: [{ provider: 'openai', model: 'gpt-test', inputTokens: 30, outputTokens: 10, totalTokens: 40 }],
    });
    expect(await endedRunRow(input.runId)).toMatchObject({ status: 'error', error_code: 'QUOTA_EXCEEDED' });

    const refusedInput = runInput('hi');
    const refused = await run(alice, refusedInput);
    expect(refused.res.status).toBe(429);
    expect(refused.body).toMatchObject({ statusCode: 429, code: 'QUOTA_EXCEEDED' });
    const retryAfter = Number(refused.res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(server.requests.length - sent).toBe(1);
    expect(await runRow(refusedInput.runId)).toBeUndefined();

    // Another owner has the configured default (100) and is not affected.
    expect(terminal((await run(bob, runInput('hi'))).frames).type).toBe('RUN_FINISHED');
  });

  it('GET /usage: the caller’s tokens by day, agent and model, and its budget', async () => {
    const res = await api('/usage', alice);
    expect(res.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    expect(await res.json()).toEqual({
      resourceId: alice,
      days: 30,
      usage: [
        {
          day: today,
          agentId: 'assistant',
          provider: 'openai',
          model: 'gpt-test',
          runs: 2,
          inputTokens: 60,
          outputTokens: 20,
          totalTokens: 80,
        },
      ],
      budget: { tokens: 50, window: '1d', spent: 80, remaining: 0, source: 'owner' },
    });
    expect((await api('/usage?days=0', alice)).status).toBe(400);
  });

  it('GET /admin/usage: every owner, the largest first, for operators only', async () => {
    expect((await api('/admin/usage', alice)).status).toBe(403);
    const res = await api('/admin/usage?limit=500', operator, {}, ['io-admin']);
    expect(res.status).toBe(200);
    const { owners } = (await res.json()) as { owners: Array<{ resourceId: string; totalTokens: number }> };
    const ours = owners.filter((o) => o.resourceId === alice || o.resourceId === bob);
    expect(ours).toEqual([
      {
        resourceId: alice,
        runs: 2,
        inputTokens: 60,
        outputTokens: 20,
        totalTokens: 80,
        budget: { tokens: 50, window: '1d', spent: 80, remaining: 0, source: 'owner' },
      },
      {
        resourceId: bob,
        runs: 1,
        inputTokens: 30,
        outputTokens: 10,
        totalTokens: 40,
        budget: { tokens: 100, window: '1d', spent: 40, remaining: 60, source: 'configuration' },
      },
    ]);
    const totals = owners.map((o) => o.totalTokens);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
  });
});

describe('a long thread on a model with a small context window', () => {
  const WINDOW = 3000;
  let server: OpenAiServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ text: ['Still', ' here'] }), { contextWindow: WINDOW });
    t = await startApp({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      MODEL_CONTEXT_TOKENS: String(WINDOW),
      // The model would see the whole thread: nothing but the context window trims it.
      LAST_MESSAGES: '1000',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  /** 200 messages of about 60 tokens each: four times what the window holds. */
  const longHistory = () =>
    Array.from({ length: 200 }, (_, i) => ({
      id: uid('msg'),
      role: i % 2 ? 'assistant' : 'user',
      content: `message ${i}: ${'lorem ipsum '.repeat(20)}`,
    }));

  it('answers a 200-message thread, then the next message on it, with the newest messages the model sees', async () => {
    const first = storedRun('unused');
    first.messages = [...longHistory(), { id: uid('msg'), role: 'user', content: 'What did I say last?' }];
    const { frames } = await runToFrames(t.runUrl, first);
    assertStreamRules(frames, first);
    expect(terminal(frames)).toMatchObject({ type: 'RUN_FINISHED' });
    expect(shownText(frames)).toBe('Still here');
    const asked = server.requests.at(-1)!;
    // The newest message is there, the oldest are not, and what was sent fits the window.
    expect(JSON.stringify(asked.messages.at(-1))).toContain('What did I say last?');
    expect(JSON.stringify(asked.messages)).not.toContain('message 0:');
    expect(promptTokens(asked)).toBeLessThanOrEqual(WINDOW);

    // The thread now stores 202 messages; the next run reads them all from storage and still fits.
    const next = { ...storedRun('And now?'), threadId: first.threadId };
    next.forwardedProps = { ...memoryOf(first.threadId) };
    const again = await runToFrames(t.runUrl, next);
    expect(terminal(again.frames)).toMatchObject({ type: 'RUN_FINISHED' });
    expect(JSON.stringify(server.requests.at(-1)!.messages.at(-1))).toContain('And now?');
    expect(promptTokens(server.requests.at(-1)!)).toBeLessThanOrEqual(WINDOW);
  });

  it('without fitting the same thread would not fit: the provider refuses it (the window is real)', () => {
    const whole = { messages: longHistory().map((m) => ({ role: m.role, content: m.content })) };
    expect(promptTokens(whole as never)).toBeGreaterThan(WINDOW);
  });
});

describe('a history longer than MODEL_MAX_MESSAGES', () => {
  const MAX = 20;
  let server: OpenAiServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startOpenAiServer(() => ({ text: ['Noted'] }));
    t = await startApp({
      MODEL: 'openai/gpt-test',
      OPENAI_BASE_URL: server.url,
      OPENAI_API_KEY: 'test-key',
      MODEL_MAX_MESSAGES: String(MAX),
      LAST_MESSAGES: '1000',
    });
  });
  afterAll(async () => {
    await t.close();
    await server.close();
  });

  /** What the model was handed of the history: the last request's messages but the instructions. */
  const handed = () => server.requests.at(-1)!.messages.filter((m) => m.role !== 'system');
  /** 49 short messages, a tool call and its result among the newest, then the question. */
  const history = () => {
    const messages: Record<string, unknown>[] = Array.from({ length: 45 }, (_, i) => ({
      id: uid('msg'),
      role: i % 2 ? 'assistant' : 'user',
      content: `message ${i}`,
    }));
    messages.push(
      { id: uid('msg'), role: 'user', content: 'message 45' },
      {
        id: uid('msg'),
        role: 'assistant',
        toolCalls: [
          {
            id: 'call_h',
            type: 'function',
            function: { name: 'calculate', arguments: '{"expression":"1+1"}' },
          },
        ],
      },
      { id: uid('msg'), role: 'tool', toolCallId: 'call_h', content: '2' },
      { id: uid('msg'), role: 'assistant', content: 'message 48' },
      { id: uid('msg'), role: 'user', content: 'What did I say last?' },
    );
    return messages;
  };

  it('hands the model the newest MODEL_MAX_MESSAGES of a 50-message request, a tool call with its result', async () => {
    const input = runInput('unused');
    input.messages = history() as never;
    const { frames } = await runToFrames(t.runUrl, input);
    expect(terminal(frames)).toMatchObject({ type: 'RUN_FINISHED' });
    const seen = JSON.stringify(handed());
    expect(handed().length).toBeLessThanOrEqual(MAX);
    expect(seen).toContain('What did I say last?');
    expect(seen).toContain('call_h');
    expect(seen).toContain('message 31');
    expect(seen).not.toContain('message 29"');
  });

  it('caps a stored thread the client asks to see whole (memoryOptions.lastMessages) the same way', async () => {
    const first = storedRun('unused');
    first.messages = history() as never;
    expect(terminal((await runToFrames(t.runUrl, first)).frames)).toMatchObject({ type: 'RUN_FINISHED' });
    const next = runInput('And now?', {
      threadId: first.threadId,
      forwardedProps: { ...memoryOf(first.threadId), memoryOptions: { lastMessages: 1000 } },
    });
    expect(terminal((await runToFrames(t.runUrl, next)).frames)).toMatchObject({ type: 'RUN_FINISHED' });
    expect(handed().length).toBeLessThanOrEqual(MAX);
    expect(JSON.stringify(handed().at(-1))).toContain('And now?');
    expect(JSON.stringify(handed())).not.toContain('message 0"');
  });
});
