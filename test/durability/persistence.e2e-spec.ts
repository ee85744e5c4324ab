import { LapsedRunsRepository } from '../../src/runs/storage/lapsed-runs.repository';
import { placeMessages } from '../../src/threads/mastra-rows';
import { db, startApp, storedMessages, TestApp } from '../support/app';
import { memoryOf, openRun, runInput, runToFrames, shownText, types, uid } from '../support/sse';

/** docs/protocol.md#the-run-request: memory decides persistence; a run that names none is stateless. */
describe('memory decides persistence', () => {
  let t: TestApp;
  let storeAll: TestApp;
  beforeAll(async () => {
    // One after the other: two instances migrating a fresh database at once collide.
    t = await startApp();
    storeAll = await startApp({ STORE_ALL_RUNS: 'true' });
  });
  afterAll(() => Promise.all([t?.close(), storeAll?.close()]));

  const api = (app: TestApp, path: string, init: RequestInit & { owner?: string } = {}) =>
    fetch(`${app.baseUrl}/io-bridge${path}`, {
      ...init,
      headers: {
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        'x-resource-id': init.owner ?? 'alice',
      },
    });
  const run = (body: Record<string, unknown>, owner = 'alice', app = t) =>
    runToFrames(app.runUrl, {
      ...body,
      forwardedProps: { resourceId: owner, ...(body.forwardedProps ?? {}) },
    });
  const stored = async (threadId: string) =>
    db(async (c) => ({
      threads: (
        await c.query('SELECT id, io_bridge_agent_id AS agent_id FROM mastra_threads WHERE id = $1', [
          threadId,
        ])
      ).rows,
      messages: (await storedMessages(c, threadId)).map((m) => ({ id: m.id, role: m.role })),
    }));
  const listed = async (query = '', owner = 'alice', app = t) =>
    (
      (await (await api(app, `/threads?limit=100${query}`, { owner })).json()) as { threads: any[] }
    ).threads.map((th) => th.id as string);

  it('a run without memory on a new threadId stores no thread and no message, yet is recorded as a run', async () => {
    const input = runInput('hello');
    const { res, frames } = await run(input);
    expect(res.status).toBe(200);
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
    expect(await stored(input.threadId)).toEqual({ threads: [], messages: [] });
    expect(await listed()).not.toContain(input.threadId);
    expect((await api(t, `/threads/${input.threadId}`)).status).toBe(404);
    const runView = await api(t, `/runs/${input.runId}`);
    expect(runView.status).toBe(200);
    expect(await runView.json()).toMatchObject({
      id: input.runId,
      threadId: input.threadId,
      agentId: 'assistant',
      status: 'finished',
    });
  });

  it('the model of a stateless run sees only the request messages, never an earlier run on that threadId', async () => {
    const threadId = uid('stateless');
    await run({ ...runInput('first'), threadId });
    const { frames } = await run({
      ...runInput('/history'),
      threadId,
      messages: [
        { id: uid('m'), role: 'user', content: 'earlier' },
        { id: uid('m'), role: 'user', content: '/history' },
      ],
    });
    expect(shownText(frames)).toBe('user: earlier\nuser: /history');
    expect(await stored(threadId)).toEqual({ threads: [], messages: [] });
  });

  it('a run naming memory (memory.thread, or memoryOptions alone) creates the thread and stores both sides', async () => {
    for (const props of [(id: string) => memoryOf(id, 'alice'), () => ({ memoryOptions: {} })]) {
      const input = runInput('hello');
      const { frames } = await run({ ...input, forwardedProps: props(input.threadId) });
      expect(types(frames).at(-1)).toBe('RUN_FINISHED');
      const { threads, messages } = await stored(input.threadId);
      expect(threads).toEqual([{ id: input.threadId, agent_id: 'assistant' }]);
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(await listed()).toContain(input.threadId);
    }
    // The same request without them is stateless: memory is what stored the two above.
    const bare = runInput('hello');
    await run(bare);
    expect(await stored(bare.threadId)).toEqual({ threads: [], messages: [] });
  });

  it('a run without memory on an existing thread of the owner is stored and reads its history', async () => {
    const created = await api(t, '/threads', { method: 'POST', body: '{}' });
    const { id: threadId } = await created.json();
    await run({ ...runInput('one'), threadId });
    const { frames } = await run({ ...runInput('/history'), threadId });
    expect(shownText(frames)).toBe('user: one\nassistant: You said: one\nuser: /history');
    expect((await stored(threadId)).messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    // What stored it is the thread: the same run on a threadId the owner has no thread for stores nothing.
    const bare = runInput('one');
    await run(bare);
    expect(await stored(bare.threadId)).toEqual({ threads: [], messages: [] });
  });

  it('memory.thread other than threadId is 400 VALIDATION_FAILED naming forwardedProps.memory.thread', async () => {
    const input = runInput('hello');
    const { res, raw } = await run({ ...input, forwardedProps: memoryOf(uid('other')) });
    expect(res.status).toBe(400);
    expect(JSON.parse(raw)).toEqual({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: 'Invalid forwardedProps',
      details: [{ path: 'forwardedProps.memory.thread', message: 'must equal threadId' }],
    });
    expect(await stored(input.threadId)).toEqual({ threads: [], messages: [] });
  });

  it('STORE_ALL_RUNS=true stores a run that names no memory', async () => {
    const input = runInput('hello');
    const { frames } = await run(input, 'alice', storeAll);
    expect(types(frames).at(-1)).toBe('RUN_FINISHED');
    expect((await stored(input.threadId)).messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await listed('', 'alice', storeAll)).toContain(input.threadId);
    // The switch is what stores it: the default instance, on the same database, keeps nothing of it.
    const bare = runInput('hello');
    await run(bare);
    expect(await stored(bare.threadId)).toEqual({ threads: [], messages: [] });
  });

  it('another owner’s memory-less run on a thread is stateless: 200, and the thread is untouched', async () => {
    const threadId = uid('alices');
    await run({ ...runInput('mine'), threadId, forwardedProps: memoryOf(threadId) });
    const { res, frames } = await run({ ...runInput('/history'), threadId }, 'bob');
    expect(res.status).toBe(200);
    expect(shownText(frames)).toBe('user: /history');
    expect((await stored(threadId)).messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(await listed('', 'bob')).not.toContain(threadId);
  });

  it('stateless runs hold no thread: two at once on one threadId both stream, and a stored run may start beside them', async () => {
    const threadId = uid('free');
    const slow = () =>
      openRun(t.runUrl, { ...runInput('/slow 100 a b c'), threadId }, { 'x-resource-id': 'alice' });
    const first = await slow();
    await first.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    const second = await slow();
    expect(second.res.status).toBe(200);
    const stored = await run({ ...runInput('kept'), threadId, forwardedProps: memoryOf(threadId) });
    expect(stored.res.status).toBe(200);
    expect(types(stored.frames).at(-1)).toBe('RUN_FINISHED');
    expect(types(await first.done).at(-1)).toBe('RUN_FINISHED');
    expect(types(await second.done).at(-1)).toBe('RUN_FINISHED');
    // Only the stored run's messages are in the thread; the stateless runs added none at their end.
    const messages = await db((c) => storedMessages(c, threadId));
    expect(messages.map((m) => m.content)).toEqual(['kept', 'You said: kept']);
  });

  it('the reaper keeps nothing of a lapsed stateless run, even when a thread of that id exists', async () => {
    const { id: threadId } = await (await api(t, '/threads', { method: 'POST', body: '{}' })).json();
    const runId = uid('lapsed');
    await db((c) =>
      c.query(
        `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at, stateless, checkpoint)
         VALUES ($1, $2, 'alice', 'assistant', 'running', now() - interval '1 second', true, $3::jsonb)`,
        [
          runId,
          threadId,
          JSON.stringify(placeMessages(threadId, [{ id: uid('cp'), role: 'assistant', content: 'shown' }])),
        ],
      ),
    );
    expect(await t.app.get(LapsedRunsRepository).endLapsed(threadId)).toEqual([runId]);
    expect((await stored(threadId)).messages).toEqual([]);
    expect(await (await api(t, `/runs/${runId}`)).json()).toMatchObject({
      status: 'error',
      error: { code: 'INTERRUPTED' },
    });
  });

  it('a thread made with POST /threads without agentId takes the agent of its first stored run', async () => {
    const owner = uid('agentless');
    const { id: threadId } = await (await api(t, '/threads', { method: 'POST', body: '{}', owner })).json();
    expect(await listed('&agentId=assistant', owner)).not.toContain(threadId);
    await run({ ...runInput('hi'), threadId }, owner);
    expect(await listed('&agentId=assistant', owner)).toEqual([threadId]);
    expect(await (await api(t, `/threads/${threadId}`, { owner })).json()).toMatchObject({
      agentId: 'assistant',
    });
    // A thread that has its agent keeps it, whichever agent runs on it.
    const { id: calc } = await (
      await api(t, '/threads', { method: 'POST', body: '{"agentId":"calculator"}', owner })
    ).json();
    await run({ ...runInput('hi'), threadId: calc }, owner);
    expect(await (await api(t, `/threads/${calc}`, { owner })).json()).toMatchObject({
      agentId: 'calculator',
    });
  });
});
