import { spawn } from 'node:child_process';
import { Memory } from '@mastra/memory';
import { PostgresStore } from '@mastra/pg';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { db, eventually } from '../support/app';
import { BuiltService, MAIN, startBuiltService } from '../support/built-service';
import { TestIdp } from '../support/oidc';
import { OpenAiServer, startOpenAiServer } from '../support/openai-server';
import { rejoin } from '../support/durable';
import { Frame, memoryOf, openRun, parseFrames, postRun, runInput, shownText, types } from '../support/sse';
import { titlesAnswered } from '../support/prompt-script';
import { assertStreamRules } from '../support/stream-rules';
import type { RunInput } from '../../packages/conformance/src/stream-rules';

/**
 * A team's own Mastra project served through MASTRA_ENTRY (docs/agents.md#your-own-mastra-project):
 * examples/mastra-project, written as Mastra users write one (TypeScript with extensionless imports,
 * `new Agent`, `new Memory`, instructions that are a function of the request context, a server tool),
 * its model on the OpenAI-compatible test server, served by the built service.
 */
const ENTRY = join(__dirname, '..', '..', 'examples', 'mastra-project', 'src', 'mastra', 'index.ts');

/** Mastra memory's `generateTitle` request (made in the background after a run): answered apart from the script. */
const TITLES = titlesAnswered('Order questions');

/** `POST /run` of `body` to `service` with `headers`: asserts a 200 (its body shown if not) and returns the frames. */
async function runOn(service: BuiltService, body: unknown, headers: Record<string, string> = {}) {
  const res = await postRun(`${service.base}/run`, body, {
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
  });
  const text = await res.text();
  expect({ status: res.status, text: res.ok ? '' : text }).toEqual({ status: 200, text: '' });
  return parseFrames(text).frames;
}

/** A thread's rows as Mastra's memory stores them, in its order (time, then id). */
const threadRows = (threadId: string) =>
  db((c) =>
    c.query<{ role: string; content: string }>(
      `SELECT role, content FROM mastra_messages WHERE thread_id = $1 ORDER BY "createdAt", id`,
      [threadId],
    ),
  ).then((r) => r.rows);

/**
 * Starts `input` on replica `a`, kills it (`kill -9`) at the answer's first words, and follows the
 * run on replica `b`, which continues it once the lease lapses: every frame the client saw.
 */
async function killedMidAnswer(
  a: BuiltService,
  b: BuiltService,
  input: ReturnType<typeof runInput>,
  leaseMs: number,
) {
  const live = await openRun(`${a.base}/run`, input, { 'x-resource-id': 'gina' });
  await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
  a.kill();
  await live.done.catch(() => undefined);
  const seen = [...live.frames];
  const rest = await rejoin(b.base, input.runId, seen.at(-1)!.id, leaseMs + 20_000);
  return [...seen, ...(await rest.done)];
}

/** A run on thread `threadId`, stored in its memory, that approves interrupt `interruptId` (a 1.x client). */
const approving = (threadId: string, interruptId: string) => ({
  threadId,
  runId: `run-resume-${Date.now()}`,
  messages: [],
  protocolVersion: '1.0',
  resume: [{ interruptId, status: 'resolved', payload: { approved: true } }],
  forwardedProps: memoryOf(threadId),
});

const systemOf = (request: { messages: Array<Record<string, any>> }) =>
  request.messages
    .filter((m) => m.role === 'system')
    .map((m) => String(m.content))
    .join('\n');

describe('a Mastra project of the team’s own (MASTRA_ENTRY)', () => {
  let model: OpenAiServer;
  let service: BuiltService;
  const run = (owner: string, body: unknown) => runOn(service, body, { 'x-resource-id': owner });

  beforeAll(async () => {
    model = await startOpenAiServer(() => ({ text: ['Hello'] }), TITLES);
    service = await startBuiltService({ MASTRA_ENTRY: ENTRY, OPENAI_BASE_URL: model.url, MODEL: 'scripted' });
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
    await model?.close();
  });

  it('lists the project’s agents with their tools, the first as the default', async () => {
    const list = (await (await fetch(`${service.base}/agents`)).json()) as Record<string, any>;
    expect(list.defaultAgentId).toBe('support-agent');
    expect(list.agents).toEqual([
      expect.objectContaining({
        id: 'support-agent',
        name: 'Support Agent',
        description: 'Answers questions about orders',
        modelId: 'openai/gpt-4o-mini',
        tools: [
          { name: 'orderStatus', description: 'The delivery status of an order, by its number' },
          { name: 'cancelOrder', description: 'Cancels an order, by its number', requiresApproval: true },
        ],
      }),
    ]);
  });

  it('streams a turn that calls the project’s server tool, its instructions written for the caller', async () => {
    model.enqueue(
      { toolCalls: [{ id: 'call_1', name: 'orderStatus', arguments: '{"orderId":"A-1001"}' }] },
      { text: ['Your order ', 'has shipped.'] },
    );
    const input = runInput('Where is order A-1001?');
    const frames = await run('alice', input);
    assertStreamRules(frames, input);
    expect(types(frames)).toContain('TOOL_CALL_RESULT');
    const result = frames.find((f: Frame) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ orderId: 'A-1001', status: 'shipped' });
    expect(shownText(frames)).toBe('Your order has shipped.');
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    const [first, second] = model.requests.slice(-2);
    // The instructions are the agent's own function of the request context: the owner is in it.
    expect(systemOf(first)).toContain('You are talking to alice.');
    expect(first.tools!.map((t: any) => t.function.name)).toEqual(['orderStatus', 'cancelOrder']);
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
  });

  it('puts the owner under Mastra’s reserved key, and no client can name another there', async () => {
    const threadId = `thread-reserved-${Date.now()}`;
    const input = runInput('hi', {
      threadId,
      forwardedProps: {
        ...memoryOf(threadId),
        mastra__resourceId: 'bob',
        mastra__threadId: 'bobs-thread',
      },
    });
    const frames = await run('carol', input);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    const system = systemOf(model.requests.at(-1)!);
    expect(system).toContain('You are talking to carol.');
    expect(system).not.toContain('bob');
    // The agent's memory wrote the run's thread, carol's, and nothing under the names the client sent.
    const threads = await db((c) =>
      c.query<{ id: string; resourceId: string }>(
        `SELECT id, "resourceId" FROM mastra_threads WHERE id = ANY($1::text[]) ORDER BY id`,
        [[threadId, 'bobs-thread']],
      ),
    );
    expect(threads.rows).toEqual([{ id: threadId, resourceId: 'carol' }]);
  });

  /** The user and assistant texts of a provider request, in order. */
  const conversationOf = (request: { messages: Array<Record<string, any>> }) =>
    request.messages
      .filter((m) => m.role === 'user' || (m.role === 'assistant' && typeof m.content === 'string'))
      .map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`);

  it('recalls a stored thread from the agent’s own memory: each earlier message reaches the model once', async () => {
    const threadId = `thread-memory-${Date.now()}`;
    const first = runInput('My name is Erin.', { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ text: ['Hello Erin.'] });
    expect((await run('erin', first)).at(-1)!.event.type).toBe('RUN_FINISHED');
    // The memory's generateTitle names the thread in the background after the run, through the agent's
    // model. Mastra asks again after any run that ends while the thread has no title yet, so the next
    // turn waits for it.
    const title = await eventually(async () => {
      const titled = await db((c) => c.query(`SELECT title FROM mastra_threads WHERE id = $1`, [threadId]));
      return (titled.rows[0]?.title as string | undefined) || undefined;
    });
    expect(title).toBe('Order questions');
    // The second turn sends only its new message, as io.Assist does.
    const second = runInput('What is my name?', { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ text: ['Erin.'] });
    expect((await run('erin', second)).at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(conversationOf(model.requests.at(-1)!)).toEqual([
      'user: My name is Erin.',
      'assistant: Hello Erin.',
      'user: What is my name?',
    ]);
    // io-bridge's thread shows the same title, not the first message's text.
    const shown = await eventually(async () => {
      const res = await fetch(`${service.base}/threads/${threadId}`, {
        headers: { 'x-resource-id': 'erin' },
      });
      const thread = (await res.json()) as { title?: string | null };
      return thread.title || undefined;
    });
    expect(shown).toBe('Order questions');
    // A titled thread is not named again: one title request, from the first turn.
    expect(model.aside.filter((r) => JSON.stringify(r.messages).includes('My name is Erin.'))).toHaveLength(
      1,
    );
    // A client that resends the whole history (AG-UI clients do) gets each message to the model once.
    const stored = (await (
      await fetch(`${service.base}/threads/${threadId}/messages?format=agui`, {
        headers: { 'x-resource-id': 'erin' },
      })
    ).json()) as { messages: Array<Record<string, unknown>> };
    const third = runInput('And again?', { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ text: ['Still Erin.'] });
    const resent = { ...third, messages: [...stored.messages, ...third.messages] };
    expect((await run('erin', resent)).at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(conversationOf(model.requests.at(-1)!)).toEqual([
      'user: My name is Erin.',
      'assistant: Hello Erin.',
      'user: What is my name?',
      'assistant: Erin.',
      'user: And again?',
    ]);
    // One store, one writer: each message is one row, every row io-bridge's (the memory saved none of its own).
    const rows = await db((c) =>
      c.query<{ content: string }>(`SELECT content FROM mastra_messages WHERE thread_id = $1`, [threadId]),
    );
    const agui = rows.rows.map(
      (r) => (JSON.parse(r.content) as { metadata?: { agui?: unknown[] } }).metadata?.agui,
    );
    expect(agui.every((messages) => Array.isArray(messages) && messages.length === 1)).toBe(true);
    expect(rows.rows).toHaveLength(6);
  });

  it('takes the request’s memoryOptions.lastMessages over the agent’s own', async () => {
    const threadId = `thread-last-${Date.now()}`;
    const turnWith = (text: string, extra: object = {}) =>
      runInput(text, { threadId, forwardedProps: { ...memoryOf(threadId), ...extra } });
    for (const [text, answer] of [
      ['one', 'One.'],
      ['two', 'Two.'],
    ]) {
      model.enqueue({ text: [answer] });
      expect((await run('kim', turnWith(text))).at(-1)!.event.type).toBe('RUN_FINISHED');
    }
    model.enqueue({ text: ['Three.'] });
    const last = await run('kim', turnWith('three', { memoryOptions: { lastMessages: 1 } }));
    expect(last.at(-1)!.event.type).toBe('RUN_FINISHED');
    // One message recalled (Mastra puts a "." user message before a history that opens with the assistant).
    const conversation = conversationOf(model.requests.at(-1)!);
    expect(conversation.slice(-2)).toEqual(['assistant: Two.', 'user: three']);
    expect(conversation.filter((m) => /one|One|two/.test(m))).toEqual([]);
  });

  it('asks before a `requireApproval` tool runs (an interrupt); approved, it runs and the model goes on', async () => {
    const threadId = `thread-approval-${Date.now()}`;
    const input = runInput('Cancel order A-1002', {
      threadId,
      forwardedProps: memoryOf(threadId),
      protocolVersion: '1.0',
    });
    model.enqueue({ toolCalls: [{ id: 'call_c', name: 'cancelOrder', arguments: '{"orderId":"A-1002"}' }] });
    const asked = await run('frank', input);
    assertStreamRules(asked, input);
    expect(types(asked)).not.toContain('TOOL_CALL_RESULT');
    const outcome = asked.at(-1)!.event.outcome;
    expect(outcome).toMatchObject({
      type: 'interrupt',
      interrupts: [{ reason: 'tool_approval', toolCallId: 'call_c' }],
    });
    model.enqueue({ text: ['Order A-1002 is cancelled.'] });
    const resume = approving(threadId, outcome.interrupts[0].id);
    const resumed = await run('frank', resume);
    assertStreamRules(resumed, resume);
    const result = resumed.find((f: Frame) => f.event.type === 'TOOL_CALL_RESULT')!.event;
    expect(JSON.parse(result.content)).toEqual({ orderId: 'A-1002', cancelled: true });
    expect(shownText(resumed)).toBe('Order A-1002 is cancelled.');
    // The model sees the call and its result once each.
    const last = model.requests.at(-1)!.messages;
    expect(last.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['call_c']);
    expect(last.filter((m) => m.role === 'assistant' && m.tool_calls).length).toBe(1);
  });

  it('keeps working memory per owner: written in one thread, it is in the owner’s next thread and no one else’s', async () => {
    const stamp = Date.now();
    const turnOn = (threadId: string, text: string) =>
      runInput(text, { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue(
      {
        toolCalls: [
          {
            id: 'call_wm',
            name: 'updateWorkingMemory',
            arguments: JSON.stringify({ memory: '# User\n- Name: Hana\n- Likes: tea' }),
          },
        ],
      },
      { text: ['Noted.'] },
    );
    const wrote = await run('hana', turnOn(`thread-wm-1-${stamp}`, 'I am Hana and I like tea.'));
    expect(wrote.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(model.requests.at(-2)!.tools!.map((t: any) => t.function.name)).toContain('updateWorkingMemory');

    model.enqueue({ text: ['Tea, Hana?'] });
    expect((await run('hana', turnOn(`thread-wm-2-${stamp}`, 'What do I like?'))).at(-1)!.event.type).toBe(
      'RUN_FINISHED',
    );
    expect(systemOf(model.requests.at(-1)!)).toContain('- Likes: tea');

    model.enqueue({ text: ['Hello.'] });
    expect((await run('ivan', turnOn(`thread-wm-3-${stamp}`, 'What do I like?'))).at(-1)!.event.type).toBe(
      'RUN_FINISHED',
    );
    expect(systemOf(model.requests.at(-1)!)).not.toContain('Hana');
    expect(systemOf(model.requests.at(-1)!)).not.toContain('tea');
  });

  describe('one set of threads with Mastra’s memory', () => {
    // Mastra's own memory API on the service's database, as Mastra Studio, a workflow or the team's code use it.
    let memory: Memory;
    let store: PostgresStore;
    beforeAll(() => {
      store = new PostgresStore({ id: 'test-mastra-api', connectionString: process.env.E2E_DATABASE_URL! });
      memory = new Memory({ storage: store });
    });
    afterAll(async () => {
      await store?.close();
    });
    const get = (owner: string, path: string) =>
      fetch(`${service.base}${path}`, { headers: { 'x-resource-id': owner } });

    it('lists a thread written through Mastra’s memory API with its messages, as its owner’s only', async () => {
      const threadId = `thread-by-mastra-${Date.now()}`;
      await memory.createThread({ threadId, resourceId: 'olive', title: 'Order 42' });
      const at = Date.now() - 10_000;
      await memory.saveMessages({
        messages: [
          {
            id: `${threadId}-q`,
            threadId,
            resourceId: 'olive',
            role: 'user',
            createdAt: new Date(at),
            type: 'text',
            content: { format: 2, parts: [{ type: 'text', text: 'Where is order 42?' }] },
          },
          {
            id: `${threadId}-a`,
            threadId,
            resourceId: 'olive',
            role: 'assistant',
            createdAt: new Date(at + 1000),
            type: 'text',
            content: {
              format: 2,
              parts: [
                { type: 'step-start' },
                {
                  type: 'tool-invocation',
                  toolInvocation: {
                    state: 'result',
                    toolCallId: 'call-42',
                    toolName: 'orderStatus',
                    args: { orderId: '42' },
                    result: { status: 'shipped' },
                  },
                },
                { type: 'step-start' },
                { type: 'text', text: 'It has shipped.' },
              ],
            },
          },
        ],
      });

      const listed = (await (await get('olive', '/threads')).json()) as {
        threads: Array<Record<string, unknown>>;
      };
      expect(listed.threads.find((t) => t.id === threadId)).toMatchObject({
        id: threadId,
        resourceId: 'olive',
        title: 'Order 42',
      });
      const agui = (await (await get('olive', `/threads/${threadId}/messages?format=agui`)).json()) as {
        messages: unknown[];
      };
      expect(agui.messages).toEqual([
        { id: `${threadId}-q`, role: 'user', content: 'Where is order 42?' },
        {
          id: `${threadId}-a`,
          role: 'assistant',
          toolCalls: [
            {
              id: 'call-42',
              type: 'function',
              function: { name: 'orderStatus', arguments: '{"orderId":"42"}' },
            },
          ],
        },
        { id: `${threadId}-a:call-42`, role: 'tool', toolCallId: 'call-42', content: '{"status":"shipped"}' },
        { id: `${threadId}-a:1`, role: 'assistant', content: 'It has shipped.' },
      ]);
      const ui = (await (await get('olive', `/threads/${threadId}/messages`)).json()) as {
        messages: Array<{ id: string; role: string; content: { parts: Array<Record<string, unknown>> } }>;
      };
      expect(ui.messages.map((m) => [m.id, m.role, m.content.parts.map((p) => p.type)])).toEqual([
        [`${threadId}-q`, 'user', ['text']],
        [`${threadId}-a`, 'assistant', ['step-start', 'tool-invocation', 'step-start', 'text']],
      ]);
      expect(ui.messages[1].content.parts[1]).toEqual({
        type: 'tool-invocation',
        toolInvocation: {
          state: 'result',
          toolCallId: 'call-42',
          toolName: 'orderStatus',
          args: { orderId: '42' },
          result: { status: 'shipped' },
        },
      });
      // A page of one, then the page before it.
      const last = (await (
        await get('olive', `/threads/${threadId}/messages?limit=1&format=agui`)
      ).json()) as {
        messages: Array<{ id: string }>;
        nextCursor: string | null;
      };
      expect(last.messages.map((m) => m.id)).toEqual([
        `${threadId}-a`,
        `${threadId}-a:call-42`,
        `${threadId}-a:1`,
      ]);
      const before = (await (
        await get('olive', `/threads/${threadId}/messages?limit=1&format=agui&before=${last.nextCursor}`)
      ).json()) as { messages: Array<{ id: string }>; nextCursor: string | null };
      expect(before).toEqual({
        messages: [expect.objectContaining({ id: `${threadId}-q` })],
        nextCursor: null,
      });

      // Another owner neither lists nor reaches it.
      const others = (await (await get('mallory', '/threads')).json()) as { threads: Array<{ id: string }> };
      expect(others.threads.map((t) => t.id)).not.toContain(threadId);
      for (const path of [`/threads/${threadId}`, `/threads/${threadId}/messages`]) {
        expect((await get('mallory', path)).status).toBe(404);
      }
      const patch = await fetch(`${service.base}/threads/${threadId}`, {
        method: 'PATCH',
        headers: { 'x-resource-id': 'mallory', 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Mine now' }),
      });
      expect(patch.status).toBe(404);

      // Its owner goes on with it: the model reads the earlier turn from the memory, once.
      model.enqueue({ text: ['It left on Monday.'] });
      const next = runInput('When did it leave?', { threadId, forwardedProps: memoryOf(threadId) });
      expect((await run('olive', next)).at(-1)!.event.type).toBe('RUN_FINISHED');
      expect(conversationOf(model.requests.at(-1)!)).toEqual([
        'user: Where is order 42?',
        'assistant: It has shipped.',
        'user: When did it leave?',
      ]);
      const after = (await (await get('olive', `/threads/${threadId}/messages?format=agui`)).json()) as {
        messages: Array<{ role: string; content?: unknown }>;
      };
      expect(after.messages.filter((m) => m.role !== 'tool').map((m) => [m.role, m.content ?? null])).toEqual(
        [
          ['user', 'Where is order 42?'],
          ['assistant', null],
          ['assistant', 'It has shipped.'],
          ['user', 'When did it leave?'],
          ['assistant', 'It left on Monday.'],
        ],
      );

      // Renamed by its owner, in Mastra's memory too; deleted, it is gone from the memory.
      const renamed = await fetch(`${service.base}/threads/${threadId}`, {
        method: 'PATCH',
        headers: { 'x-resource-id': 'olive', 'content-type': 'application/json' },
        body: JSON.stringify({ title: 'Order 42, shipped' }),
      });
      expect(renamed.status).toBe(200);
      expect((await memory.getThreadById({ threadId }))?.title).toBe('Order 42, shipped');
      const deleted = await fetch(`${service.base}/threads/${threadId}`, {
        method: 'DELETE',
        headers: { 'x-resource-id': 'olive' },
      });
      expect(deleted.status).toBe(204);
      expect(await memory.getThreadById({ threadId })).toBeNull();
      expect((await get('olive', `/threads/${threadId}`)).status).toBe(404);
    });

    it('a thread written through io-bridge reads back through Mastra’s memory API with the same messages', async () => {
      const threadId = `thread-by-io-bridge-${Date.now()}`;
      model.enqueue({ text: ['Hello Pia.'] });
      expect(
        (await run('pia', runInput('I am Pia.', { threadId, forwardedProps: memoryOf(threadId) }))).at(-1)!
          .event.type,
      ).toBe('RUN_FINISHED');
      const page = (await (await get('pia', `/threads/${threadId}/messages?format=agui`)).json()) as {
        messages: Array<{ role: string; content: unknown }>;
      };
      const { messages } = await memory.recall({ threadId, resourceId: 'pia' });
      const texts = messages.map((m) => [
        m.role,
        m.content.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join(''),
      ]);
      expect(texts).toEqual(page.messages.map((m) => [m.role, m.content]));
      expect(texts).toEqual([
        ['user', 'I am Pia.'],
        ['assistant', 'Hello Pia.'],
      ]);
      // Mastra's API refuses it to another owner, as io-bridge does.
      expect(
        (await memory.recall({ threadId, resourceId: 'mallory' }).catch(() => ({ messages: [] }))).messages,
      ).toEqual([]);
    });
  });

  it('finds an agent by the key the Mastra instance registered it under too', async () => {
    const frames = await run('dave', runInput('hi', { forwardedProps: { agentId: 'supportAgent' } }));
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(systemOf(model.requests.at(-1)!)).toContain('You are talking to dave.');
  });
});

describe('a Mastra project behind sign-in (AUTH_MODE=jwt): the caller’s claims in the request context', () => {
  let idp: TestIdp;
  let model: OpenAiServer;
  let service: BuiltService;
  beforeAll(async () => {
    idp = await TestIdp.start();
    model = await startOpenAiServer(() => ({ text: ['Hello'] }), TITLES);
    service = await startBuiltService(
      {
        MASTRA_ENTRY: ENTRY,
        OPENAI_BASE_URL: model.url,
        AUTH_MODE: 'jwt',
        OIDC_ISSUER: idp.issuer,
        OIDC_AUDIENCE: idp.audience,
      },
      120_000,
    );
  }, 150_000);
  afterAll(async () => {
    await service?.stop();
    await model?.close();
    await idp?.close();
  });

  it('an agent’s instructions read the token’s name claim; a client cannot put claims of its own', async () => {
    const token = await idp.sign({ sub: 'user-jo', name: 'Jo Doe', email: 'jo@example.com', secret: 'x' });
    const input = runInput('hi', { forwardedProps: { claims: { name: 'Someone Else' } } });
    const frames = await runOn(service, input, { authorization: `Bearer ${token}` });
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    const system = systemOf(model.requests.at(-1)!);
    expect(system).toContain('You are talking to user-jo (Jo Doe).');
    expect(system).not.toContain('Someone Else');
  });
});

describe('a Mastra project in JavaScript: models chosen per request, and fallbacks', () => {
  let model: OpenAiServer;
  let service: BuiltService;
  beforeAll(async () => {
    model = await startOpenAiServer(() => ({ text: ['Hello'] }));
    service = await startBuiltService(
      {
        MASTRA_ENTRY: join(__dirname, '..', 'fixtures', 'mastra-js-project', 'index.mjs'),
        OPENAI_BASE_URL: model.url,
        MODEL_RETRIES: '0',
      },
      120_000,
    );
  }, 150_000);
  afterAll(async () => {
    await service?.stop();
    await model?.close();
  });
  const run = (body: unknown) => runOn(service, body);

  it('lists each agent with what its model is', async () => {
    const list = (await (await fetch(`${service.base}/agents`)).json()) as {
      agents: Array<Record<string, unknown>>;
    };
    expect(list.agents.map((a) => [a.id, a.modelId])).toEqual([
      ['router', 'dynamic'],
      ['fallback', 'openai/primary, openai/secondary'],
    ]);
  });

  it('a model that is a function of the request context is chosen per run, through io-bridge’s provider calls', async () => {
    for (const [tier, expected] of [
      ['large', 'gpt-large'],
      [undefined, 'gpt-small'],
    ]) {
      model.enqueue({ text: ['Hi.'], usage: { prompt: 7, completion: 2 } });
      const input = runInput('hi', {
        protocolVersion: '1.0',
        forwardedProps: { agentId: 'router', ...(tier ? { tier } : {}) },
      });
      const frames = await run(input);
      assertStreamRules(frames, input);
      expect(model.requests.at(-1)!.model).toBe(expected);
      // Usage comes from io-bridge's wrapper of the agent's model.
      expect(frames.at(-1)!.event).toMatchObject({
        type: 'RUN_FINISHED',
        usage: [expect.objectContaining({ inputTokens: 7, outputTokens: 2 })],
      });
    }
  });

  it('a failing first model falls back to the next, as Mastra does', async () => {
    model.enqueue({ status: 500, error: 'primary is down' }, { text: ['From the second.'] });
    const frames = await run(runInput('hi', { forwardedProps: { agentId: 'fallback' } }));
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(shownText(frames)).toBe('From the second.');
    expect(model.requests.slice(-2).map((r) => r.model)).toEqual(['primary', 'secondary']);
  });
});

describe('a Mastra project’s agent with observational memory', () => {
  const OBSERVER = 'You are the memory consciousness of an AI assistant';
  /** A first turn long enough that the memory observes the thread on the next. */
  const PAST_THRESHOLD =
    'Please remember this about me: my favourite colour is teal, I live by the sea, and I drink my tea without sugar every morning.';
  /**
   * After a turn that went on from a call (asked in the second turn, answered in the third) and one
   * more: the answer and the call's result are each in one row, and the rows are io-bridge's.
   */
  const storedOnce = async (threadId: string, answer: string, result: string) => {
    const rows = await threadRows(threadId);
    expect(rows.filter((r) => r.content.includes(answer)).map((r) => r.role)).toEqual(['assistant']);
    expect(rows.filter((r) => r.content.includes(result)).length).toBe(1);
    const turns = ['user', 'assistant', 'user', 'assistant', 'assistant', 'user', 'assistant'];
    expect(rows.map((r) => r.role)).toEqual(turns);
    expect(rows.filter((r) => !r.content.includes('"agui":'))).toEqual([]);
  };
  let model: OpenAiServer;
  let service: BuiltService;
  /** Runs `input`, a turn that goes on from a call, then `next`: the answer, in a well-formed stream. */
  const wentOn = async (input: RunInput, next: RunInput) => {
    const frames = await runOn(service, input, { 'x-resource-id': 'tess' });
    assertStreamRules(frames, input);
    const text = shownText(frames);
    expect(text).toMatch(/^Noted \d+\.$/);
    await runOn(service, next, { 'x-resource-id': 'tess' });
    return text;
  };
  beforeAll(async () => {
    let answers = 0;
    model = await startOpenAiServer(() => ({ text: [`Noted ${++answers}.`] }), {
      // The observer's calls, made by Mastra's memory around the agent's: answered apart from the script.
      aside: (request) =>
        request.messages.some((m) => m.role === 'system' && String(m.content).includes(OBSERVER))
          ? { text: ['<observations>\n* User said their favourite colour is teal.\n</observations>'] }
          : undefined,
    });
    service = await startBuiltService({
      MASTRA_ENTRY: join(__dirname, '..', 'fixtures', 'mastra-om-project', 'index.ts'),
      OPENAI_BASE_URL: model.url,
    });
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
    await model?.close();
  });

  it('observes a thread past its threshold and gives the agent the observations, in well-formed streams', async () => {
    const threadId = `thread-om-${Date.now()}`;
    const turn = (text: string) => runInput(text, { threadId, forwardedProps: memoryOf(threadId) });
    const first = turn(PAST_THRESHOLD);
    const second = turn('What is my favourite colour? Answer in one word, and tell me where I live as well.');
    for (const input of [first, second]) {
      const frames = await runOn(service, input, { 'x-resource-id': 'tess' });
      assertStreamRules(frames, input);
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    }
    // The observer was asked about the thread, and the agent's later prompt holds what it observed.
    expect(model.aside.some((r) => JSON.stringify(r.messages).includes('favourite colour is teal'))).toBe(
      true,
    );
    expect(systemOf(model.requests.at(-1)!)).toContain('User said their favourite colour is teal.');
    const stored = await db((c) =>
      c.query<{ activeObservations: string }>(
        `SELECT "activeObservations" FROM mastra_observational_memory WHERE "threadId" = $1`,
        [threadId],
      ),
    );
    expect(stored.rows.map((r) => r.activeObservations).join('\n')).toContain('favourite colour is teal');
  });

  it('a run cancelled mid-answer: what the memory saved as it wound down is gone by the next run’s end', async () => {
    const threadId = `thread-om-cancel-${Date.now()}`;
    const turn = (text: string) => runInput(text, { threadId, forwardedProps: memoryOf(threadId) });
    await runOn(service, turn(PAST_THRESHOLD), { 'x-resource-id': 'tess' });
    // Past the threshold: the memory observes as the run begins, and saves its copy again once cancelled.
    model.enqueue({ hang: 'Let me think ' });
    const input = turn(
      'And remember that my cat is called Juniper and she sleeps on the windowsill all afternoon long.',
    );
    const live = await openRun(`${service.base}/run`, input, { 'x-resource-id': 'tess' });
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
    const cancel = await fetch(`${service.base}/runs/${input.runId}/cancel`, {
      method: 'POST',
      headers: { 'x-resource-id': 'tess' },
    });
    expect(cancel.status).toBe(202);
    expect((await live.done).at(-1)!.event.type).toBe('RUN_ERROR');
    expect((await runOn(service, turn('Thanks.'), { 'x-resource-id': 'tess' })).at(-1)!.event.type).toBe(
      'RUN_FINISHED',
    );
    const rows = await threadRows(threadId);
    expect(rows.filter((r) => !r.content.includes('"agui":')).map((r) => r.role)).toEqual([]);
    expect(rows.map((r) => r.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });

  it('leaves each answer in the thread once, and in the model’s prompt at most once', async () => {
    const threadId = `thread-om-once-${Date.now()}`;
    const turn = (text: string) => runInput(text, { threadId, forwardedProps: memoryOf(threadId) });
    const answers: string[] = [];
    // Observed turns (past the threshold) and turns that are not: the memory saves both kinds itself.
    for (const text of [
      PAST_THRESHOLD,
      'Thanks.',
      'And remember that my cat is called Juniper and she sleeps on the windowsill all afternoon long.',
      'Bye.',
    ]) {
      const frames = await runOn(service, turn(text), { 'x-resource-id': 'tess' });
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
      answers.push(shownText(frames));
    }
    // Each answer its own (`Noted <n>.`), so a copy of one is told apart.
    expect(new Set(answers).size).toBe(4);
    // The store: each answer in one row (the observer's copies gave way to io-bridge's rows).
    const rows = await threadRows(threadId);
    for (const answer of answers)
      expect(rows.filter((r) => r.content.includes(answer)).map((r) => r.role)).toEqual(['assistant']);
    expect(rows.map((r) => r.role)).toEqual(Array(4).fill(['user', 'assistant']).flat());
    // The thread as its owner reads it: four questions, four answers, once each.
    const listed = (await (
      await fetch(`${service.base}/threads/${threadId}/messages?format=agui`, {
        headers: { 'x-resource-id': 'tess' },
      })
    ).json()) as { messages: Array<{ role: string; content?: string }> };
    expect(listed.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(answers);
    // The last prompt: no message twice.
    const said = model.requests
      .at(-1)!
      .messages.filter((m) => m.role !== 'system')
      .map((m) => JSON.stringify(m.content));
    expect(new Set(said).size).toBe(said.length);
  });

  it('a turn that goes on from a frontend tool’s result in the next request: its answer once, not folded into the call’s row', async () => {
    const threadId = `thread-om-tool-${Date.now()}`;
    const tools = [
      { name: 'pickColour', description: 'Asks the user for a colour', parameters: { type: 'object' } },
    ];
    const turn = (messages: unknown[]) => ({
      ...runInput('', { threadId, tools, protocolVersion: '1.0' }),
      messages,
      forwardedProps: { ...memoryOf(threadId), clientProtocol: 'ag-ui' },
    });
    const say = (text: string) =>
      turn([{ id: `msg-${text.length}-${Date.now()}`, role: 'user', content: text }]);
    await runOn(service, say(PAST_THRESHOLD), { 'x-resource-id': 'tess' });
    model.enqueue({ toolCalls: [{ id: 'call_pick', name: 'pickColour', arguments: '{}' }] });
    const asked = await runOn(service, say('Let me pick a colour for the kitchen walls.'), {
      'x-resource-id': 'tess',
    });
    expect(asked.at(-1)!.event.outcome).toEqual({ type: 'success', pendingToolCallIds: ['call_pick'] });
    // The result, the AG-UI way: the next request carries it; the model goes on from it.
    const answer = turn([
      { id: `tool-${Date.now()}`, role: 'tool', toolCallId: 'call_pick', content: 'sage green' },
    ]);
    const text = await wentOn(answer, say('Bye.'));
    // Without Mastra's response boundary on io-bridge's row of the call, the memory folded the
    // answer into that row as well: the answer was stored twice.
    await storedOnce(threadId, text, 'sage green');
    // The last prompt: the call, its result and the answer at most once each (the memory may have
    // observed them, and then gives the observations in their place).
    const said = model.requests
      .at(-1)!
      .messages.filter((m) => m.role !== 'system')
      .map((m) => JSON.stringify([m.role, m.content, m.tool_calls]));
    expect(new Set(said).size).toBe(said.length);
    expect(said.filter((m) => m.includes(text)).length).toBeLessThanOrEqual(1);
    expect(said.filter((m) => m.includes('sage green')).length).toBeLessThanOrEqual(1);
  });

  it('a turn that goes on from an approval resumed in a later run: its answer once, not folded into the call’s row', async () => {
    const threadId = `thread-om-approval-${Date.now()}`;
    const props = memoryOf(threadId);
    const say = (text: string) => runInput(text, { threadId, forwardedProps: props, protocolVersion: '1.0' });
    await runOn(service, say(PAST_THRESHOLD), { 'x-resource-id': 'tess' });
    model.enqueue({ toolCalls: [{ id: 'call_paint', name: 'paint', arguments: '{"room":"kitchen"}' }] });
    const asked = await runOn(service, say('Paint the kitchen teal, please.'), { 'x-resource-id': 'tess' });
    const outcome = asked.at(-1)!.event.outcome;
    expect(outcome).toMatchObject({ type: 'interrupt', interrupts: [{ toolCallId: 'call_paint' }] });
    const resume = approving(threadId, outcome.interrupts[0].id);
    const text = await wentOn(resume, say('Bye.'));
    // Without the call's message kept for its interrupt (its input streamed before Mastra's
    // tool-call chunk), the resumed run stored the call again, in a row of its own.
    await storedOnce(threadId, text, '"painted":true');
  });

  it('keeps working memory of thread scope in its thread: in that thread’s next prompt, not in the owner’s other thread', async () => {
    const stamp = Date.now();
    const turn = (threadId: string, text: string) =>
      runInput(text, { threadId, forwardedProps: { ...memoryOf(threadId), agentId: 'keeper' } });
    const notes = '# Kitchen\n- Colour: sage green';
    model.enqueue(
      {
        toolCalls: [
          { id: 'call_wm', name: 'updateWorkingMemory', arguments: JSON.stringify({ memory: notes }) },
        ],
      },
      { text: ['Noted.'] },
    );
    const kept = `thread-wm-kept-${stamp}`;
    await runOn(service, turn(kept, 'The kitchen is sage green.'), { 'x-resource-id': 'tess' });
    model.enqueue({ text: ['Sage green.'] });
    await runOn(service, turn(kept, 'What colour is the kitchen?'), { 'x-resource-id': 'tess' });
    expect(systemOf(model.requests.at(-1)!)).toContain('- Colour: sage green');
    model.enqueue({ text: ['I do not know.'] });
    await runOn(service, turn(`thread-wm-other-${stamp}`, 'What colour is the kitchen?'), {
      'x-resource-id': 'tess',
    });
    expect(systemOf(model.requests.at(-1)!)).not.toContain('sage green');
    // Mastra keeps it in the thread's metadata: io-bridge's writes to the thread leave it there.
    const { rows } = await db((c) =>
      c.query<{ metadata: { workingMemory?: string } }>(`SELECT metadata FROM mastra_threads WHERE id = $1`, [
        kept,
      ]),
    );
    expect(rows[0].metadata.workingMemory).toBe(notes);
  });
});

describe('a MASTRA_ENTRY io-bridge cannot use stops start-up with one line naming it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mastra-entry-'));
  /** What the built service prints and its exit code, started with `entry`. */
  const start = (entry: string) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN], {
        env: {
          ...process.env,
          PORT: '0',
          MASTRA_ENTRY: entry,
          ...(process.env.E2E_DATABASE_URL ? { DATABASE_URL: process.env.E2E_DATABASE_URL } : {}),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });

  it.each<[string, () => string, RegExp]>([
    [
      'a file that does not exist',
      () => join(dir, 'missing.ts'),
      /MASTRA_ENTRY: .*missing\.ts does not exist/,
    ],
    [
      'a module without a `mastra` export',
      () => {
        writeFileSync(join(dir, 'no-mastra.ts'), 'export const agents = {};\n');
        return join(dir, 'no-mastra.ts');
      },
      /MASTRA_ENTRY: .*no-mastra\.ts exports no `mastra`/,
    ],
    [
      'an agent that is not a Mastra Agent',
      () => {
        writeFileSync(
          join(dir, 'not-agent.ts'),
          'export const mastra = { listAgents: () => ({ helper: { id: "helper", stream() {} } }) };\n',
        );
        return join(dir, 'not-agent.ts');
      },
      /MASTRA_ENTRY: .*not-agent\.ts agent 'helper' lacks getDescription/,
    ],
    ...['2.0.0', '1.40.0'].map(
      (version) =>
        [
          `a project on @mastra/core ${version}, outside the peer dependency’s range`,
          () => {
            const project = join(dir, `v${version}`);
            const core = join(project, 'node_modules', '@mastra', 'core');
            mkdirSync(core, { recursive: true });
            writeFileSync(
              join(core, 'package.json'),
              JSON.stringify({ name: '@mastra/core', version, main: 'index.js' }),
            );
            writeFileSync(join(core, 'index.js'), 'module.exports = {};\n');
            writeFileSync(join(project, 'index.mjs'), 'export const mastra = { listAgents: () => ({}) };\n');
            return join(project, 'index.mjs');
          },
          new RegExp(
            `MASTRA_ENTRY: .*index\\.mjs uses @mastra/core ${version.replaceAll('.', '\\.')}; io-bridge serves @mastra/core \\^1\\.71\\.0`,
          ),
        ] as [string, () => string, RegExp],
    ),
    [
      'a module that throws',
      () => {
        writeFileSync(join(dir, 'throws.ts'), 'throw new Error("no database configured");\nexport {};\n');
        return join(dir, 'throws.ts');
      },
      /MASTRA_ENTRY: .*throws\.ts could not be loaded: no database configured/,
    ],
    [
      'a Memory with semantic recall and no vector store (docs/agents.md)',
      () => join(__dirname, '..', 'fixtures', 'mastra-semantic-recall', 'index.ts'),
      /MASTRA_ENTRY: .*index\.ts could not be loaded: Semantic recall requires a vector store to be configured/,
    ],
    [
      'a Memory whose storage is not the threads io-bridge stores (docs/agents.md)',
      () => join(__dirname, '..', 'fixtures', 'mastra-other-store', 'index.ts'),
      /MASTRA_ENTRY: agent 'elsewhere': its Memory's storage does not hold io-bridge's threads/,
    ],
  ])(
    '%s',
    async (_what, entry, line) => {
      const { code, output } = await start(entry());
      expect(code).toBe(1);
      expect(output).toMatch(line);
      expect(output.match(/MASTRA_ENTRY/g)).toHaveLength(1);
    },
    60_000,
  );
});

describe('a Mastra project’s agent with memory, its replica killed mid-answer', () => {
  const LEASE_MS = 3000;
  let model: OpenAiServer;
  const replicas: BuiltService[] = [];
  beforeAll(async () => {
    model = await startOpenAiServer(() => ({ text: ['Unexpected.'] }), TITLES);
  });
  afterAll(async () => {
    replicas.forEach((s) => s.kill());
    await model?.close();
  });

  it('the continued run leaves the question and the answer in the thread once, and in the agent’s memory once', async () => {
    const env = { MASTRA_ENTRY: ENTRY, OPENAI_BASE_URL: model.url, RUN_LEASE_MS: String(LEASE_MS) };
    const [a, b] = await Promise.all([startBuiltService(env, 120_000), startBuiltService(env, 120_000)]);
    replicas.push(a, b);
    const threadId = `thread-killed-${Date.now()}`;
    const earlier = runInput('My name is Gina.', { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ text: ['Hi Gina.'] });
    expect(
      (await (await openRun(`${b.base}/run`, earlier, { 'x-resource-id': 'gina' })).done).at(-1)!.event.type,
    ).toBe('RUN_FINISHED');
    const input = runInput('Where is order A-1003?', { threadId, forwardedProps: memoryOf(threadId) });
    // The first replica's provider call stops mid-answer; the continuation's answers whole.
    model.enqueue({ hang: 'Let me ' }, { text: ['Order A-1003 ', 'is packing.'] });
    const whole = await killedMidAnswer(a, b, input, LEASE_MS);
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event.type).toBe('RUN_FINISHED');

    // The continuation's provider call has the earlier turn and the question once each.
    const continued = model.requests.at(-1)!;
    expect(continued.messages.filter((m) => m.role !== 'system').map((m) => [m.role, m.content])).toEqual([
      ['user', 'My name is Gina.'],
      ['assistant', 'Hi Gina.'],
      ['user', 'Where is order A-1003?'],
    ]);
    // io-bridge's thread and the agent's memory each hold the question and the answer once.
    const page = (await (
      await fetch(`${b.base}/threads/${threadId}/messages?format=agui`, {
        headers: { 'x-resource-id': 'gina' },
      })
    ).json()) as { messages: Array<{ role: string; content: unknown }> };
    expect(page.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'My name is Gina.'],
      ['assistant', 'Hi Gina.'],
      ['user', 'Where is order A-1003?'],
      ['assistant', 'Order A-1003 is packing.'],
    ]);
    const remembered = await threadRows(threadId);
    expect(remembered.map((m) => [m.role, textOf(m.content)])).toEqual([
      ['user', 'My name is Gina.'],
      ['assistant', 'Hi Gina.'],
      ['user', 'Where is order A-1003?'],
      ['assistant', 'Order A-1003 is packing.'],
    ]);
  }, 180_000);
});

describe('a Mastra project’s agent with observational memory, its replica killed mid-answer', () => {
  const LEASE_MS = 3000;
  let model: OpenAiServer;
  const replicas: BuiltService[] = [];
  beforeAll(async () => {
    model = await startOpenAiServer(() => ({ text: ['Unexpected.'] }), {
      aside: (request) =>
        request.messages.some(
          (m) => m.role === 'system' && String(m.content).includes('memory consciousness'),
        )
          ? { text: ['<observations>\n* User is Gina; she lives by the sea.\n</observations>'] }
          : undefined,
    });
  });
  afterAll(async () => {
    replicas.forEach((s) => s.kill());
    await model?.close();
  });

  it('the continued run leaves the answer in the thread once: the memory’s copies of the lost attempt go too', async () => {
    const env = {
      MASTRA_ENTRY: join(__dirname, '..', 'fixtures', 'mastra-om-project', 'index.ts'),
      OPENAI_BASE_URL: model.url,
      RUN_LEASE_MS: String(LEASE_MS),
    };
    // One after the other: two stores making Mastra's tables at once can trip over each other.
    const a = await startBuiltService(env, 120_000);
    replicas.push(a);
    const b = await startBuiltService(env, 120_000);
    replicas.push(b);
    const threadId = `thread-om-killed-${Date.now()}`;
    const said = 'My name is Gina, I live by the sea with my cat Juniper, and I take my tea without sugar.';
    const earlier = runInput(said, { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ text: ['Hi Gina.'] });
    expect(
      (await (await openRun(`${b.base}/run`, earlier, { 'x-resource-id': 'gina' })).done).at(-1)!.event.type,
    ).toBe('RUN_FINISHED');
    // Past the memory's threshold: it observes as the run begins and saves a copy of the turn so far.
    const question = 'Where is order A-1003, which I placed on Monday for the cottage by the sea?';
    const input = runInput(question, { threadId, forwardedProps: memoryOf(threadId) });
    model.enqueue({ hang: 'Let me ' }, { text: ['Order A-1003 ', 'is packing.'] });
    const whole = await killedMidAnswer(a, b, input, LEASE_MS);
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(model.aside.length).toBeGreaterThan(0);

    const page = (await (
      await fetch(`${b.base}/threads/${threadId}/messages?format=agui`, {
        headers: { 'x-resource-id': 'gina' },
      })
    ).json()) as { messages: Array<{ role: string; content: unknown }> };
    expect(page.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', said],
      ['assistant', 'Hi Gina.'],
      ['user', question],
      ['assistant', 'Order A-1003 is packing.'],
    ]);
    const remembered = await threadRows(threadId);
    expect(remembered.map((m) => [m.role, textOf(m.content)])).toEqual([
      ['user', said],
      ['assistant', 'Hi Gina.'],
      ['user', question],
      ['assistant', 'Order A-1003 is packing.'],
    ]);
  }, 180_000);
});

/** The text of a message as Mastra stores it (`{ format: 2, parts: [...] }`). */
function textOf(content: unknown): string {
  const parsed = (typeof content === 'string' ? JSON.parse(content) : content) as {
    parts?: Array<{ type: string; text?: string }>;
  };
  return (parsed.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');
}
