import { join } from 'node:path';
import { BuiltService, startBuiltService } from '../support/built-service';
import { OpenAiServer, startOpenAiServer } from '../support/openai-server';
import { memoryOf, openRun, parseFrames, postRun, runInput, shownText, types } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/**
 * io-bridge in a company's own Nest app (docs/agents.md#in-your-own-nest-app): examples/host-nest-app
 * as built, a Fastify Nest app with a global guard of its own (an employee key), a route of its own
 * (`/me`), its own Mastra instance (`new Agent`, `new Memory`, instructions from the request context,
 * a server tool, the model on the OpenAI-compatible test server) and `IoBridgeModule.forRoot` with a
 * `principal` that maps the employee the guard found to the caller.
 */
const HOST_MAIN = join(__dirname, '..', '..', 'dist', 'examples', 'host-nest-app', 'src', 'main.js');
const ADA = { 'x-employee-key': 'key-ada' };
const ALAN = { 'x-employee-key': 'key-alan' };

describe('io-bridge served by a host Nest app with a guard of its own', () => {
  let model: OpenAiServer;
  let host: BuiltService;

  beforeAll(async () => {
    model = await startOpenAiServer(() => ({ text: ['Hello'] }));
    host = await startBuiltService({ OPENAI_BASE_URL: model.url }, 90_000, HOST_MAIN, undefined, {
      path: '/io-bridge/health/ready',
      headers: ADA,
    });
  }, 120_000);
  afterAll(async () => {
    await host?.stop();
    await model?.close();
  });

  const get = (path: string, headers: Record<string, string> = ADA) =>
    fetch(`${host.origin}${path}`, { headers });
  const run = async (body: unknown, headers: Record<string, string> = ADA) => {
    const res = await postRun(`${host.base}/run`, body, {
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    });
    const text = await res.text();
    return { status: res.status, text, frames: res.status === 200 ? parseFrames(text).frames : [] };
  };

  it('the host’s guard and routes stay the host’s: its own 401 and /me, beside io-bridge’s routes', async () => {
    expect(await (await get('/me')).json()).toEqual({ id: 'ada', name: 'Ada Lovelace' });
    const refused = await get('/me', {});
    expect(refused.status).toBe(401);
    // The host's error shape, not io-bridge's envelope (no `code`): io-bridge's filter is on its routes only.
    expect(await refused.json()).toEqual({
      statusCode: 401,
      message: 'Unknown employee key',
      error: 'Unauthorized',
    });
    // io-bridge's routes are behind the host's guard too, refused in io-bridge's envelope (its clients read it).
    const ours = await get('/io-bridge/agents', {});
    expect(ours.status).toBe(401);
    expect(await ours.json()).toMatchObject({ statusCode: 401, code: 'UNAUTHENTICATED' });
  });

  it('lists the host’s Mastra agents with their tools', async () => {
    const list = (await (await get('/io-bridge/agents')).json()) as Record<string, any>;
    expect(list.defaultAgentId).toBe('desk-agent');
    expect(list.agents).toEqual([
      expect.objectContaining({
        id: 'desk-agent',
        name: 'Desk Agent',
        tools: [
          { name: 'freeRoom', description: 'A free meeting room on a floor' },
          { name: 'bookRoom', description: 'Books a meeting room', requiresApproval: true },
        ],
      }),
    ]);
  });

  it('runs the agent as the employee the host’s guard found: owner and claims in its instructions', async () => {
    model.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'freeRoom', arguments: '{"floor":3}' }] },
      { text: ['Room ', '3.12 is free.'] },
    );
    const input = runInput('A room on floor 3?');
    const { status, text, frames } = await run(input);
    expect({ status, text: status === 200 ? '' : text }).toEqual({ status: 200, text: '' });
    assertStreamRules(frames, input);
    expect(types(frames)).toContain('TOOL_CALL_RESULT');
    expect(shownText(frames)).toBe('Room 3.12 is free.');
    const system = model.requests
      .at(-2)!
      .messages.filter((m: Record<string, any>) => m.role === 'system')
      .map((m: Record<string, any>) => String(m.content))
      .join('\n');
    expect(system).toContain('You find meeting rooms for ada (Ada Lovelace).');
  });

  it('keeps each employee’s threads their own: another’s thread is a 404, naming another owner a 403', async () => {
    const threadId = `host-thread-${Date.now()}`;
    model.enqueue({ text: ['Noted.'] });
    const first = await run(runInput('Remember floor 3.', { threadId, forwardedProps: memoryOf(threadId) }));
    expect(first.frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect((await get(`/io-bridge/threads/${threadId}`)).status).toBe(200);
    const foreign = await get(`/io-bridge/threads/${threadId}`, ALAN);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
    const alans = (await (await get('/io-bridge/threads', ALAN)).json()) as {
      threads: Array<{ id: string }>;
    };
    expect(alans.threads.map((t) => t.id)).not.toContain(threadId);
    // A body naming another owner than the caller the host mapped.
    const named = await run(runInput('hi', { forwardedProps: { resourceId: 'alan' } }));
    expect(named.status).toBe(403);
    expect(JSON.parse(named.text)).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('answers bad input on its routes with its envelope', async () => {
    const res = await fetch(`${host.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...ADA },
      body: JSON.stringify({ threadId: 7 }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    // Refused by the host's JSON parser, before io-bridge's handler: still io-bridge's envelope.
    const notJson = await fetch(`${host.base}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...ADA },
      body: '{"threadId":',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    const unknown = await get('/io-bridge/no-such-route');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
  });
});

describe('a host Nest app stopped with SIGTERM (app.enableShutdownHooks())', () => {
  it('drains io-bridge first: a run still going is handed over and its stream ends RUN_MOVED, not cut', async () => {
    const model = await startOpenAiServer(() => ({ hang: 'Thinking' }));
    const host = await startBuiltService(
      { OPENAI_BASE_URL: model.url, SHUTDOWN_GRACE_MS: '1000' },
      90_000,
      HOST_MAIN,
      undefined,
      { path: '/io-bridge/health/ready', headers: ADA },
    );
    try {
      const input = runInput('Which room?');
      const live = await openRun(`${host.base}/run`, input, ADA);
      await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      const stopped = host.stop();
      // No other replica takes it: relayed for SHUTDOWN_GRACE_MS, then RUN_MOVED for this connection
      // only (not in the run's log: its client rejoins where another replica continues it).
      const frames = await live.done;
      expect(frames.at(-1)).toMatchObject({
        unlogged: true,
        event: { type: 'RUN_ERROR', code: 'RUN_MOVED' },
      });
      expect(frames.filter((f) => f.unlogged)).toHaveLength(1);
      await stopped;
      expect(host.output()).not.toMatch(/ERROR/);
    } finally {
      await host.stop();
      await model.close();
    }
  }, 120_000);
});
