import { db, startApp, TestApp } from '../support/app';
import { memoryOf, openRun, postRun, runInput, shownText, types, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** A cursor made as the service makes them (a time and an id, base64url JSON), to forge bad ones. */
const cursorOf = (parts: unknown) => Buffer.from(JSON.stringify(parts)).toString('base64url');

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('threads and messages', () => {
  let t: TestApp;
  let api: (path: string, init?: RequestInit & { owner?: string }) => Promise<Response>;
  beforeAll(async () => {
    t = await startApp();
    api = (path, init = {}) =>
      fetch(`${t.baseUrl}/io-bridge${path}`, {
        ...init,
        headers: {
          ...(init.body ? { 'content-type': 'application/json' } : {}),
          'x-resource-id': init.owner ?? 'alice',
          ...(init.headers as Record<string, string>),
        },
      });
  });
  afterAll(() => t.close());

  const runText = async (
    threadId: string,
    messages: unknown[],
    owner = 'alice',
    extra: Record<string, unknown> = {},
  ) => {
    // A chat turn as io.Assist sends it: naming memory, so the run is stored (docs/protocol.md#the-run-request).
    const input = {
      threadId,
      runId: uid('run'),
      messages,
      tools: [],
      context: [],
      forwardedProps: memoryOf(threadId, owner),
      ...extra,
    };
    const res = await postRun(t.runUrl, input, {
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-resource-id': owner },
    });
    const raw = await res.text();
    return { status: res.status, raw, input };
  };

  const answerOf = (raw: string) =>
    raw
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)))
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('');

  const messagesOf = async (threadId: string, query = 'format=agui', owner = 'alice') => {
    const res = await api(`/threads/${threadId}/messages?${query}`, { owner });
    expect(res.status).toBe(200);
    return (await res.json()) as { messages: any[]; nextCursor: string | null };
  };

  describe('CRUD', () => {
    it('creates, returns the same thread for the same id, refuses another owner the id', async () => {
      const id = uid('th');
      const first = await api('/threads', {
        method: 'POST',
        body: JSON.stringify({ id, title: 'T', metadata: { a: 1 } }),
      });
      expect(first.status).toBe(201);
      const thread = await first.json();
      expect(thread).toMatchObject({ id, resourceId: 'alice', title: 'T', metadata: { a: 1 } });
      expect(Number.isNaN(Date.parse(thread.createdAt))).toBe(false);
      const again = await api('/threads', { method: 'POST', body: JSON.stringify({ id }) });
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual(thread);
      const stolen = await api('/threads', { method: 'POST', body: JSON.stringify({ id }), owner: 'bob' });
      expect(stolen.status).toBe(409);
      expect(await stolen.json()).toEqual({
        statusCode: 409,
        code: 'THREAD_ID_CONFLICT',
        message: `Thread id '${id}' cannot be used`,
      });
    });

    it('generates an id, reads, patches (metadata replaces), deletes', async () => {
      const created = await (
        await api('/threads', { method: 'POST', body: JSON.stringify({ metadata: { a: 1, b: 2 } }) })
      ).json();
      expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(created).not.toHaveProperty('title');
      expect(await (await api(`/threads/${created.id}`)).json()).toEqual(created);
      const patched = await api(`/threads/${created.id}`, {
        method: 'PATCH',
        body: JSON.stringify({ title: 'Renamed', metadata: { c: 3 } }),
      });
      expect(patched.status).toBe(200);
      const body = await patched.json();
      expect(body).toMatchObject({ title: 'Renamed', metadata: { c: 3 } });
      expect(Date.parse(body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
      expect((await api(`/threads/${created.id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await api(`/threads/${created.id}`)).status).toBe(404);
      expect((await api(`/threads/${created.id}`, { method: 'DELETE' })).status).toBe(404);
    });

    it('refuses bad input with 400: limit out of range, bad cursor, bad body', async () => {
      // Times JavaScript reads and Postgres does not (year 0, text after the time), and a NUL in the id.
      for (const q of [
        'limit=0',
        'limit=101',
        'limit=abc',
        'cursor=nope',
        `cursor=${cursorOf(['0000-01-01 00:00:00+00', 't'])}`,
        `cursor=${cursorOf(['2020-01-01T00:00:00Z (x)', 't'])}`,
        `cursor=${cursorOf(['2020-01-01 00:00:00.123456+00', 't\u0000'])}`,
      ]) {
        const res = await api(`/threads?${q}`);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: 'VALIDATION_FAILED' });
      }
      const bad = await api('/threads', { method: 'POST', body: JSON.stringify({ metadata: 'x' }) });
      expect(bad.status).toBe(400);
      const unknownAgent = await api('/threads', {
        method: 'POST',
        body: JSON.stringify({ agentId: 'nope' }),
      });
      expect(unknownAgent.status).toBe(404);
      const thread = await (await api('/threads', { method: 'POST', body: '{}' })).json();
      // Cursors that are not one: not JSON, a day that does not exist, a time without its microseconds, too long.
      for (const q of [
        'limit=0',
        'limit=501',
        'format=html',
        'before=x',
        `before=${cursorOf(['2026-02-30T00:00:00.000000', 'm1'])}`,
        `before=${cursorOf(['2026-02-01T00:00:00', 'm1'])}`,
        `before=${cursorOf(['2026-02-01T00:00:00.000000', 7])}`,
        `before=${cursorOf(['0000-02-01T00:00:00.000000', 'm1'])}`,
        `before=${cursorOf(['2026-02-01T00:00:00.000000', 'm\u0000'])}`,
        `before=${'a'.repeat(1001)}`,
      ]) {
        const res = await api(`/threads/${thread.id}/messages?${q}`);
        expect({ q, status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({
          q,
          status: 400,
          code: 'VALIDATION_FAILED',
        });
      }
    });
  });

  it('walks a list page by page with no duplicates and no gaps, across inserts between pages', async () => {
    const owner = uid('walker');
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      const res = await api('/threads', { method: 'POST', body: JSON.stringify({ id: uid('w') }), owner });
      ids.push((await res.json()).id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api(`/threads?limit=10${cursor ? `&cursor=${cursor}` : ''}`, { owner });
      const page = await res.json();
      seen.push(...page.threads.map((th: { id: string }) => th.id));
      cursor = page.nextCursor;
      pages++;
      // Someone creates threads while the list is being read: they are newer, so never in a later page.
      await api('/threads', { method: 'POST', body: JSON.stringify({ id: uid('late') }), owner });
    } while (cursor);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...ids].sort());
    expect(seen).toEqual([...ids].reverse());
  });

  it('filters the list by agentId', async () => {
    const owner = uid('agents');
    await api('/threads', { method: 'POST', body: JSON.stringify({ agentId: 'assistant' }), owner });
    await api('/threads', { method: 'POST', body: '{}', owner });
    const page = await (await api('/threads?agentId=assistant', { owner })).json();
    expect(page.threads).toHaveLength(1);
    expect(page.threads[0].agentId).toBe('assistant');
  });

  describe('a conversation on the server', () => {
    it('creates the thread on the first run, titles it, and stores both sides with the ids the events carried', async () => {
      const threadId = uid('conv');
      const { status, raw, input } = await runText(threadId, [
        { id: 'u1', role: 'user', content: 'hello there\nsecond line' },
      ]);
      expect(status).toBe(200);
      const thread = await (await api(`/threads/${threadId}`)).json();
      expect(thread).toMatchObject({
        id: threadId,
        title: 'hello there',
        agentId: 'assistant',
        resourceId: 'alice',
      });
      const { messages } = await messagesOf(threadId);
      const start = raw.split('\n').find((l) => l.includes('TEXT_MESSAGE_START'))!;
      const messageId = JSON.parse(start.slice(6)).messageId;
      expect(messages).toEqual([
        { id: 'u1', role: 'user', content: 'hello there\nsecond line' },
        { id: messageId, role: 'assistant', content: 'You said: hello there\nsecond line' },
      ]);
      expect(input.runId).toBeTruthy();
    });

    it('stores nothing twice whether the client resends the whole history or only the new message', async () => {
      const threadId = uid('hist');
      await runText(threadId, [{ id: 'u1', role: 'user', content: 'one' }]);
      const stored1 = (await messagesOf(threadId)).messages;
      // Full resend: the stored messages plus the new one.
      await runText(threadId, [...stored1, { id: 'u2', role: 'user', content: 'two' }]);
      // Only the new message, as io.Assist sends it.
      const { raw } = await runText(threadId, [{ id: 'u3', role: 'user', content: '/history' }]);
      const { messages } = await messagesOf(threadId);
      expect(messages.map((m) => m.id)).toEqual([...new Set(messages.map((m) => m.id))]);
      expect(messages.map((m) => `${m.role}:${m.content}`)).toEqual([
        'user:one',
        'assistant:You said: one',
        'user:two',
        'assistant:You said: two',
        'user:/history',
        expect.stringMatching(/^assistant:user: one\n/),
      ]);
      expect(answerOf(raw)).toBe(
        [
          'user: one',
          'assistant: You said: one',
          'user: two',
          'assistant: You said: two',
          'user: /history',
        ].join('\n'),
      );
    });

    it('replays a thread with tool calls from format=agui into a new run that the model receives correctly', async () => {
      const threadId = uid('replay');
      const live = await openRun(
        t.runUrl,
        {
          threadId,
          runId: uid('run'),
          messages: [
            {
              id: 'u1',
              role: 'user',
              content: '/tool calculate {"expression":"1+1"}\n/tool get_city {"city":"x"}',
            },
          ],
          tools: [GET_CITY],
          context: [],
          forwardedProps: memoryOf(threadId),
        },
        { 'x-resource-id': 'alice' },
      );
      const end = await live.waitFor(
        (e) =>
          e.type === 'TOOL_CALL_END' &&
          live.frames.some((f) => f.event.toolCallName === 'get_city' && f.event.toolCallId === e.toolCallId),
      );
      const runId = (live.frames[0].event as { runId: string }).runId;
      const post = await fetch(`${t.baseUrl}/io-bridge/runs/${runId}/tool-calls/${end.toolCallId}/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-resource-id': 'alice' },
        body: JSON.stringify({ content: { city: 'Lyon' } }),
      });
      expect(post.status).toBe(202);
      await live.done;
      const stored = (await messagesOf(threadId)).messages;
      expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
      expect(stored[1].toolCalls.map((c: any) => c.function.name)).toEqual(['calculate', 'get_city']);
      expect(stored[3]).toMatchObject({
        role: 'tool',
        toolCallId: end.toolCallId,
        content: '{"city":"Lyon"}',
      });

      // A fresh thread fed with the replayed messages: the model sees the calls and their results.
      const replayThread = uid('replayed');
      const { raw } = await runText(replayThread, [
        ...stored,
        { id: 'u9', role: 'user', content: '/history' },
      ]);
      const seen = answerOf(raw).split('\n');
      expect(seen[0]).toBe('user: /tool calculate {"expression":"1+1"}\\n/tool get_city {"city":"x"}');
      expect(seen[1]).toBe(
        'assistant: [tool-call calculate({"expression":"1+1"})] [tool-call get_city({"city":"x"})]',
      );
      expect(seen[2]).toBe(
        'tool: [tool-result calculate={"expression":"1+1","result":2}] [tool-result get_city={"city":"Lyon"}]',
      );
      expect(seen.at(-1)).toBe('user: /history');

      const ui = (await messagesOf(threadId, 'format=ui')).messages;
      expect(ui.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant']);
      expect(ui[0]).toMatchObject({ id: 'u1', threadId, content: { format: 2, parts: [{ type: 'text' }] } });
      const invocations = ui[1].content.parts.filter((p: any) => p.type === 'tool-invocation');
      expect(invocations.map((p: any) => p.toolInvocation)).toEqual([
        expect.objectContaining({
          state: 'result',
          toolName: 'calculate',
          args: { expression: '1+1' },
          result: { expression: '1+1', result: 2 },
        }),
        expect.objectContaining({
          state: 'result',
          toolName: 'get_city',
          args: { city: 'x' },
          result: { city: 'Lyon' },
        }),
      ]);
    });

    it('pages messages: the latest `limit` in order, `before` for older ones', async () => {
      const threadId = uid('pages');
      for (let i = 1; i <= 4; i++) await runText(threadId, [{ id: `u${i}`, role: 'user', content: `m${i}` }]);
      const last = await messagesOf(threadId, 'format=agui&limit=3');
      expect(last.messages.map((m) => m.content)).toEqual(['You said: m3', 'm4', 'You said: m4']);
      const older = await messagesOf(threadId, `format=agui&limit=3&before=${last.nextCursor}`);
      expect(older.messages.map((m) => m.content)).toEqual(['m2', 'You said: m2', 'm3']);
      const oldest = await messagesOf(threadId, `format=agui&limit=3&before=${older.nextCursor}`);
      expect(oldest.messages.map((m) => m.content)).toEqual(['m1', 'You said: m1']);
      expect(oldest.nextCursor).toBeNull();
    });

    it('keeps what a failed run showed, marked interrupted; stores activity and reasoning but never sends them to the model', async () => {
      const threadId = uid('fail');
      await runText(threadId, [{ id: 'u1', role: 'user', content: '/error boom' }]);
      const afterError = (await messagesOf(threadId)).messages;
      expect(afterError[1]).toMatchObject({
        role: 'assistant',
        content: 'Working on it',
        metadata: { interrupted: true },
      });

      const { raw } = await runText(threadId, [
        { id: 'act1', role: 'activity', activityType: 'progress', content: { step: 1 } },
        { id: 'rea1', role: 'reasoning', content: 'secret thoughts' },
        { id: 'u2', role: 'user', content: '/history' },
      ]);
      expect(answerOf(raw)).not.toMatch(/secret thoughts|progress|step/);
      const roles = (await messagesOf(threadId)).messages.map((m) => m.role);
      expect(roles).toEqual(['user', 'assistant', 'activity', 'reasoning', 'user', 'assistant']);
    });

    it('stores the text a cancelled run had streamed, and nothing it had not', async () => {
      const threadId = uid('cancel');
      const live = await openRun(
        t.runUrl,
        {
          threadId,
          runId: uid('run'),
          messages: [{ id: 'u1', role: 'user', content: '/slow 150 a b c d e f g h' }],
          tools: [],
          context: [],
          forwardedProps: memoryOf(threadId),
        },
        { 'x-resource-id': 'alice' },
      );
      await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      const runId = (live.frames[0].event as { runId: string }).runId;
      await fetch(`${t.baseUrl}/io-bridge/runs/${runId}/cancel`, {
        method: 'POST',
        headers: { 'x-resource-id': 'alice' },
      });
      const frames = await live.done;
      const shown = shownText(frames);
      const stored = (await messagesOf(threadId)).messages;
      expect(stored[1]).toEqual({
        id: stored[1].id,
        role: 'assistant',
        content: shown,
        metadata: { interrupted: true },
      });
    });
  });

  it('allows one active run per thread: a second is 409 THREAD_BUSY, and the thread is free again after', async () => {
    const threadId = uid('busy');
    const live = await openRun(
      t.runUrl,
      {
        threadId,
        runId: uid('run'),
        messages: [{ id: 'u1', role: 'user', content: '/slow 100 a b c' }],
        tools: [],
        context: [],
        forwardedProps: memoryOf(threadId),
      },
      { 'x-resource-id': 'alice' },
    );
    await live.waitFor((e) => e.type === 'RUN_STARTED');
    const second = await runText(threadId, [{ id: 'u2', role: 'user', content: 'x' }]);
    expect(second.status).toBe(409);
    expect(JSON.parse(second.raw)).toMatchObject({ code: 'THREAD_BUSY' });
    await live.done;
    expect((await runText(threadId, [{ id: 'u3', role: 'user', content: 'y' }])).status).toBe(200);
  });

  it('deleting a thread cancels its active run and removes its messages', async () => {
    const threadId = uid('del');
    const live = await openRun(
      t.runUrl,
      {
        threadId,
        runId: uid('run'),
        messages: [{ id: 'u1', role: 'user', content: '/slow 200 a b c d e f' }],
        tools: [],
        context: [],
        forwardedProps: memoryOf(threadId),
      },
      { 'x-resource-id': 'alice' },
    );
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    expect((await api(`/threads/${threadId}`, { method: 'DELETE' })).status).toBe(204);
    const frames = await live.done;
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    const left = await db((c) =>
      c.query('SELECT count(*)::int AS n FROM mastra_messages WHERE thread_id = $1', [threadId]),
    );
    expect(left.rows[0].n).toBe(0);
  });

  describe('ownership: another owner gets 404 everywhere', () => {
    it('on every route, and never sees the thread in a list', async () => {
      const threadId = uid('owned');
      const live = await openRun(
        t.runUrl,
        {
          threadId,
          runId: uid('run'),
          messages: [{ id: 'u1', role: 'user', content: '/tool get_city {"city":"x"}' }],
          tools: [GET_CITY],
          context: [],
          forwardedProps: memoryOf(threadId),
        },
        { 'x-resource-id': 'alice' },
      );
      const end = await live.waitFor((e) => e.type === 'TOOL_CALL_END');
      const runId = (live.frames[0].event as { runId: string }).runId;
      const asBob = { owner: 'bob' };
      const attempts: Array<[string, Promise<Response>]> = [
        ['GET thread', api(`/threads/${threadId}`, asBob)],
        [
          'PATCH thread',
          api(`/threads/${threadId}`, { ...asBob, method: 'PATCH', body: '{"title":"mine"}' }),
        ],
        ['DELETE thread', api(`/threads/${threadId}`, { ...asBob, method: 'DELETE' })],
        ['GET messages', api(`/threads/${threadId}/messages`, asBob)],
        ['GET run', api(`/runs/${runId}`, asBob)],
        ['POST cancel', api(`/runs/${runId}/cancel`, { ...asBob, method: 'POST' })],
        [
          'POST result',
          api(`/runs/${runId}/tool-calls/${end.toolCallId}/result`, {
            ...asBob,
            method: 'POST',
            body: '{"content":1}',
          }),
        ],
        [
          'POST run on the thread',
          fetch(t.runUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              ...runInput('steal'),
              threadId,
              // Naming memory: a memory-less run would be stateless and never touch Alice's thread.
              forwardedProps: { resourceId: 'bob', ...memoryOf(threadId) },
            }),
          }),
        ],
        ['query param owner', fetch(`${t.baseUrl}/io-bridge/threads/${threadId}?resourceId=bob`)],
      ];
      for (const [name, pending] of attempts) {
        const res = await pending;
        expect({ name, status: res.status, body: await res.json() }).toMatchObject({
          name,
          status: 404,
          body: { code: 'NOT_FOUND' },
        });
      }
      const bobs = await (await api('/threads?limit=100', asBob)).json();
      expect(bobs.threads.map((th: { id: string }) => th.id)).not.toContain(threadId);
      expect(bobs.threads.every((th: { resourceId: string }) => th.resourceId === 'bob')).toBe(true);
      // Alice's thread is untouched and her run still answers her.
      await fetch(`${t.baseUrl}/io-bridge/runs/${runId}/tool-calls/${end.toolCallId}/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-resource-id': 'alice' },
        body: '{"content":"ok"}',
      });
      expect(types(await live.done).at(-1)).toBe('RUN_FINISHED');
      expect((await (await api(`/threads/${threadId}`)).json()).title).toBe('/tool get_city {"city":"x"}');
    });
  });

  it('follows docs/protocol.md#the-stream on runs of a stored thread too', async () => {
    const threadId = uid('rules');
    const { raw, input } = await runText(threadId, [{ id: 'u1', role: 'user', content: 'hi' }]);
    const frames = raw
      .slice(0, -2)
      .split('\n\n')
      .map((b, i) => ({ id: i + 1, event: JSON.parse(b.split('\n')[1].slice(6)) }));
    assertStreamRules(frames, input);
  });
});
