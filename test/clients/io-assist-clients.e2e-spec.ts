import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { eventually } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { OpenAiServer, startOpenAiServer } from '../support/openai-server';
import { answerAsScripted, titlesAnswered } from '../support/prompt-script';
import { Frame, readRun, shownText, types } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** The title a team's agent's Memory asks its model for (`generateTitle`), answered apart from the script. */
const GENERATED_TITLE = 'A friendly greeting';

/**
 * The requests io.Assist and AI Web make (their public templates: InteropIO/iointel-dev-kit
 * `templates/io-assist-react-editable`, `actions/sendUserMessage.ts`, `sampling.ts`, the thread
 * actions), as they reach POST /run and the thread routes, replayed against the built service:
 * its built-in agents, and a team's own Mastra project (examples/mastra-project through
 * MASTRA_ENTRY, its model the OpenAI-compatible test server answering as the scripted model does,
 * its thread history recalled by its own Memory). AUTH_MODE=none, no X-Resource-Id header: the owner
 * travels as the clients name it.
 */
describe.each([
  { name: 'the built-in agents', agentId: 'assistant', project: false, title: 'hello there' },
  {
    name: 'a team’s Mastra project (MASTRA_ENTRY)',
    agentId: 'support-agent',
    project: true,
    title: GENERATED_TITLE,
  },
])('io.Assist and AI Web request shapes, against the built service: $name', (target) => {
  let service: BuiltService;
  let model: OpenAiServer | undefined;
  beforeAll(async () => {
    model = target.project
      ? await startOpenAiServer(answerAsScripted, titlesAnswered(GENERATED_TITLE))
      : undefined;
    // A lost tool result fails the round trip in seconds, not after the default five minutes.
    service = await startBuiltService({
      LOG_LEVEL: 'error',
      FRONTEND_TOOL_TIMEOUT_MS: '5000',
      ...(model
        ? {
            MASTRA_ENTRY: join(
              __dirname,
              '..',
              '..',
              'examples',
              'mastra-project',
              'src',
              'mastra',
              'index.ts',
            ),
            OPENAI_BASE_URL: model.url,
          }
        : {}),
    });
  }, 120_000);
  afterAll(async () => {
    await service.stop();
    await model?.close();
  });

  // An SSO user name, unique to this spec so other specs' threads never show in its lists.
  const user = `josé.martín+${randomUUID().slice(0, 8)}@corp.example`;
  const agentId = target.agentId;
  const url = (path: string) => `${service.base}${path}`;
  const json = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await fetch(url(path), {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: init.body === undefined ? {} : { 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  /** `agent.stream(params)` as AI Web posts it: AG-UI ids, the rest in forwardedProps. */
  async function stream(
    threadId: string,
    params: Record<string, unknown>,
    onEvent?: (e: Record<string, any>, runId: string) => void,
  ): Promise<{ frames: Frame[]; input: Record<string, unknown> }> {
    const { messages, tools, ...forwardedProps } = params;
    const input = {
      threadId,
      runId: randomUUID(),
      messages,
      ...(tools ? { tools } : {}),
      forwardedProps: { agentId, ...forwardedProps },
    };
    const res = await fetch(url('/run'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(input),
    });
    const live = await readRun(res);
    if (res.status !== 200) throw new Error(`run refused: ${res.status} ${live.raw()}`);
    if (onEvent) live.onEvent((e) => onEvent(e, input.runId));
    const frames = await live.done;
    assertStreamRules(frames, input);
    return { frames, input };
  }

  /** sendUserMessage: only the new message, memory naming the thread and the user. */
  const chatTurn = (threadId: string, text: string) =>
    stream(threadId, {
      messages: [{ id: randomUUID(), role: 'user', content: text }],
      memory: { thread: threadId, resource: user },
      resourceId: user,
    });

  const listThreads = () =>
    json(`/threads?agentId=${agentId}&resourceId=${encodeURIComponent(user)}`).then(
      (r) => r.body.threads as Array<{ id: string; title?: string; agentId?: string; resourceId: string }>,
    );

  describe('a chat of three turns, each sending only the new message', () => {
    const threadId = randomUUID();

    it('answers each turn, and the third sees the whole conversation from memory', async () => {
      expect(shownText((await chatTurn(threadId, 'hello there')).frames)).toBe('You said: hello there');
      expect(shownText((await chatTurn(threadId, 'second')).frames)).toBe('You said: second');
      const third = shownText((await chatTurn(threadId, '/history')).frames);
      expect(third.split('\n')).toEqual([
        'user: hello there',
        'assistant: You said: hello there',
        'user: second',
        'assistant: You said: second',
        'user: /history',
      ]);
    });

    it('threads.list({agentId, resourceId}) lists it for the user, titled, with the agent', async () => {
      // The project's title comes from its Memory's generateTitle, made in the background after the run.
      const thread = await eventually(async () =>
        (await listThreads()).find((t) => t.id === threadId && t.title === target.title),
      );
      expect(thread).toMatchObject({ id: threadId, resourceId: user, agentId, title: target.title });
    });

    it('getMessages({limit: 100}) reads the six messages in order', async () => {
      const { status, body } = await json(`/threads/${threadId}/messages?limit=100`);
      expect(status).toBe(200);
      expect(body.messages.map((m: { role: string }) => m.role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
        'assistant',
      ]);
      expect(body.messages[0].content.parts).toEqual([{ type: 'text', text: 'hello there' }]);
    });

    it('update({title}) renames it, delete() removes it from the list', async () => {
      const renamed = await json(`/threads/${threadId}`, { method: 'PATCH', body: { title: 'Renamed' } });
      expect(renamed).toMatchObject({ status: 200, body: { id: threadId, title: 'Renamed' } });
      expect((await listThreads()).find((t) => t.id === threadId)?.title).toBe('Renamed');
      expect((await json(`/threads/${threadId}`, { method: 'DELETE' })).status).toBe(204);
      expect((await listThreads()).map((t) => t.id)).not.toContain(threadId);
      expect((await json(`/threads/${threadId}/messages?limit=100`)).status).toBe(404);
    });
  });

  describe('a sampling request: agent.generate without memory', () => {
    const sampling = (threadId: string, text: string, schema?: unknown) =>
      stream(threadId, {
        messages: [
          { id: randomUUID(), role: 'system', content: 'You are a sampling helper' },
          { id: randomUUID(), role: 'user', content: text },
        ],
        instructions: 'You are a sampling helper',
        system: 'You are a sampling helper',
        // maxTokens and temperature may be undefined: JSON drops them.
        modelSettings: { maxTokens: undefined, temperature: 0.2 },
        requestContext: { modelPreferences: undefined },
        structuredOutput: { schema },
      });

    it('answers, and pollutes no conversation history: no thread is listed or readable', async () => {
      const threadId = randomUUID();
      const { frames } = await sampling(threadId, 'summarise this');
      expect(types(frames).at(-1)).toBe('RUN_FINISHED');
      expect(shownText(frames)).toBe('You said: summarise this');
      expect((await listThreads()).map((t) => t.id)).not.toContain(threadId);
      expect((await json(`/threads/${threadId}`)).status).toBe(404);
    });

    it('a schema sent as a JSON string is enforced', async () => {
      const schema = JSON.stringify({
        type: 'object',
        required: ['a'],
        properties: { a: { type: 'number' } },
      });
      const good = await sampling(randomUUID(), '/json {"a":1}', schema);
      expect(types(good.frames).at(-1)).toBe('RUN_FINISHED');
      const bad = await sampling(randomUUID(), '/json {"b":1}', schema);
      expect(bad.frames.at(-1)!.event).toMatchObject({
        type: 'RUN_ERROR',
        code: 'STRUCTURED_OUTPUT_INVALID',
      });
    });
  });

  it('a frontend tool round trip inside the chat, the tool declared without a description', async () => {
    const threadId = randomUUID();
    const tools = [
      { name: 'get_city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    ];
    let posted: Promise<Response> | undefined;
    const { frames } = await stream(
      threadId,
      {
        messages: [{ id: randomUUID(), role: 'user', content: '/tool get_city {"city":"Lyon"}' }],
        tools,
        memory: { thread: threadId, resource: user },
        resourceId: user,
      },
      (e, runId) => {
        if (e.type === 'TOOL_CALL_END') {
          posted = fetch(url(`/runs/${runId}/tool-calls/${e.toolCallId}/result`), {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ content: { city: 'Lyon', country: 'FR' } }),
          });
        }
      },
    );
    expect((await posted!).status).toBe(202);
    expect(types(frames)).toContain('TOOL_CALL_RESULT');
    expect(shownText(frames)).toBe('Tool get_city returned {"city":"Lyon","country":"FR"}');
    const { body } = await json(`/threads/${threadId}/messages?limit=100`);
    const invocation = body.messages
      .flatMap((m: { content: { parts: Array<Record<string, any>> } }) => m.content.parts)
      .find((p: Record<string, any>) => p.type === 'tool-invocation');
    expect(invocation.toolInvocation).toMatchObject({
      state: 'result',
      toolName: 'get_city',
      args: { city: 'Lyon' },
      result: { city: 'Lyon', country: 'FR' },
    });
  });
});
