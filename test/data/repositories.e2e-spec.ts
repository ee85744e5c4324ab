import { ANY_OWNER } from '../../src/auth/principal';
import { ACTIVE_STATUSES } from '../../src/runs/storage/run.entity';
import { RunsRepository } from '../../src/runs/storage/runs.repository';
import { ToolCallsRepository } from '../../src/runs/storage/tool-calls.repository';
import { MessageRow, MessagesRepository } from '../../src/threads/messages.repository';
import { ThreadsRepository } from '../../src/threads/threads.repository';
import { db, startApp, TestApp } from '../support/app';
import { uid } from '../support/sse';
import { messagesOf, placeMessages } from '../../src/threads/mastra-rows';

/** Owner scoping of every repository method, on the real database: another owner's rows are neither read nor written. */
describe('repositories: owner scoping', () => {
  const owner = 'scope-alice';
  const other = 'scope-mallory';
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  const liveRun = async (status: 'running' | 'waiting_for_tool' = 'running', threadId = uid('thread')) => {
    const runId = uid('run');
    await db((c) =>
      c.query(
        `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at)
         VALUES ($1, $2, $3, 'assistant', $4, now() + interval '1 hour')`,
        [runId, threadId, owner, status],
      ),
    );
    return runId;
  };
  const insertCall = (runId: string, toolCallId: string, status: string) =>
    db((c) =>
      c.query(
        `INSERT INTO run_tool_calls (run_id, tool_call_id, tool_name, status, result, submitted_at)
         VALUES ($1, $2, 'get_city', $3, CASE WHEN $3 = 'pending' THEN NULL ELSE '"Paris"'::jsonb END,
                 CASE WHEN $3 = 'pending' THEN NULL ELSE now() END)`,
        [runId, toolCallId, status],
      ),
    );
  /** The run's status and its calls, to compare before and after another owner's call. */
  const snapshot = (runId: string) =>
    db(async (c) => ({
      run: (await c.query('SELECT status, updated_at::text FROM runs WHERE id = $1', [runId])).rows[0],
      calls: (
        await c.query(
          `SELECT tool_call_id, tool_name, status, result, error, submitted_at::text
             FROM run_tool_calls WHERE run_id = $1 ORDER BY tool_call_id`,
          [runId],
        )
      ).rows,
    }));

  describe('ToolCallsRepository', () => {
    let repo: ToolCallsRepository;
    beforeAll(() => {
      repo = t.app.get(ToolCallsRepository);
    });

    it("register: another owner's run gets no call and does not start waiting", async () => {
      const runId = await liveRun();
      await repo.register(runId, other, 'c1', 'get_city');
      expect(await snapshot(runId)).toEqual({
        run: expect.objectContaining({ status: 'running' }),
        calls: [],
      });
      await repo.register(runId, owner, 'c1', 'get_city');
      expect(await snapshot(runId)).toMatchObject({
        run: { status: 'waiting_for_tool' },
        calls: [{ tool_call_id: 'c1', status: 'pending' }],
      });
    });

    it("register: another owner's early result is not claimed", async () => {
      const runId = await liveRun();
      await insertCall(runId, 'c1', 'early');
      const before = await snapshot(runId);
      await repo.register(runId, other, 'c1', 'other_tool');
      expect(await snapshot(runId)).toEqual(before);
    });

    it("submit: another owner's run is a 404 and its pending call stays unanswered", async () => {
      const runId = await liveRun('waiting_for_tool');
      await insertCall(runId, 'c1', 'pending');
      const before = await snapshot(runId);
      await expect(repo.submit(runId, other, 'c1', { content: 'x' })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      await expect(repo.submit(runId, other, 'made-up', { content: 'x' })).rejects.toMatchObject({
        code: 'NOT_FOUND',
      });
      expect(await snapshot(runId)).toEqual(before);
      expect(await repo.submit(runId, ANY_OWNER, 'c1', { content: 'x' })).toBe('submitted');
    });

    it("registration, withdrawEarly: another owner neither sees nor withdraws the owner's early result", async () => {
      const runId = await liveRun();
      await insertCall(runId, 'c1', 'early');
      const before = await snapshot(runId);
      expect(await repo.registration(runId, other, 'c1')).toBe('none');
      expect(await repo.withdrawEarly(runId, other, 'c1')).toBe(false);
      expect(await snapshot(runId)).toEqual(before);
      expect(await repo.registration(runId, ANY_OWNER, 'c1')).toBe('early');
      expect(await repo.withdrawEarly(runId, ANY_OWNER, 'c1')).toBe(true);
      expect((await snapshot(runId)).calls).toEqual([]);
    });

    it("take: another owner's posted result is not taken, the run stays waiting", async () => {
      const runId = await liveRun('waiting_for_tool');
      await insertCall(runId, 'c1', 'submitted');
      const before = await snapshot(runId);
      expect(await repo.take(runId, other, 'c1')).toBeUndefined();
      expect(await snapshot(runId)).toEqual(before);
      expect(await repo.take(runId, owner, 'c1')).toEqual({ content: 'Paris' });
      expect(await snapshot(runId)).toMatchObject({
        run: { status: 'running' },
        calls: [{ status: 'done' }],
      });
    });

    it("abandon: another owner's call stays open, and an idle run of another owner is not resumed", async () => {
      const runId = await liveRun('waiting_for_tool');
      await insertCall(runId, 'c1', 'submitted');
      const before = await snapshot(runId);
      await repo.abandon(runId, other, 'c1');
      expect(await snapshot(runId)).toEqual(before);
      await repo.abandon(runId, owner, 'c1');
      expect(await snapshot(runId)).toMatchObject({
        run: { status: 'running' },
        calls: [{ status: 'done' }],
      });
    });

    it("pending: another owner's waiting calls are not listed", async () => {
      const runId = await liveRun('waiting_for_tool');
      await insertCall(runId, 'c1', 'pending');
      expect(await repo.pending(runId, other)).toEqual([]);
      expect(await repo.pending(runId, owner)).toEqual([{ toolCallId: 'c1', toolName: 'get_city' }]);
    });
  });

  describe('RunsRepository', () => {
    it("findOne: another owner's run reads as missing", async () => {
      const threadId = uid('thread');
      await t.app.get(ThreadsRepository).insert({ id: threadId, resourceId: owner });
      const runId = await liveRun('waiting_for_tool', threadId);
      const runs = t.app.get(RunsRepository);
      expect(await runs.findOne(runId, other)).toBeNull();
      expect(await runs.findOne(runId, owner)).toMatchObject({ id: runId, resourceId: owner });
      expect(await runs.findOne(runId, ANY_OWNER)).toMatchObject({ id: runId });
    });

    it('renewLeases and saveCheckpoints: a held run named with another owner is neither renewed nor checkpointed', async () => {
      const runs = t.app.get(RunsRepository);
      const runId = await liveRun();
      const lease = () =>
        db(
          async (c) =>
            (
              await c.query('SELECT lease_expires_at::text AS at, checkpoint FROM runs WHERE id = $1', [
                runId,
              ])
            ).rows[0],
        );
      const before = await lease();
      const messages = placeMessages(runId, [{ id: 'cp1', role: 'assistant' as const, content: 'shown' }]);
      expect(await runs.renewLeases([{ id: runId, resourceId: other, attempt: 1 }], 7_200_000)).toEqual([]);
      expect(
        await runs.saveCheckpoints([{ id: runId, resourceId: other, attempt: 1, messages }], 7_200_000),
      ).toEqual([]);
      expect(await lease()).toEqual(before);
      expect(await runs.renewLeases([{ id: runId, resourceId: owner, attempt: 1 }], 7_200_000)).toEqual([
        runId,
      ]);
      expect(
        await runs.saveCheckpoints([{ id: runId, resourceId: owner, attempt: 1, messages }], 7_200_000),
      ).toEqual([runId]);
      expect(await lease()).toMatchObject({ checkpoint: messages });
      expect((await lease()).at).not.toBe(before.at);
    });
  });

  it('"active" in the schema is ACTIVE_STATUSES: the partial indexes on active runs use the same statuses', async () => {
    const defs = await db((c) =>
      c.query<{ name: string; def: string }>(
        `SELECT indexname AS name, indexdef AS def FROM pg_indexes
          WHERE tablename = 'runs' AND indexname IN ('runs_one_active_per_thread', 'runs_active_lease_idx')
          ORDER BY indexname`,
      ),
    );
    expect(defs.rows.map((r) => r.name)).toEqual(['runs_active_lease_idx', 'runs_one_active_per_thread']);
    for (const { def } of defs.rows) {
      const statuses = [
        ...(/status = ANY \(ARRAY\[([^\]]*)\]\)/.exec(def)?.[1] ?? '').matchAll(/'([^']+)'/g),
      ];
      expect({ def, statuses: statuses.map((m) => m[1]) }).toEqual({ def, statuses: [...ACTIVE_STATUSES] });
    }
  });

  describe('ThreadsRepository and MessagesRepository', () => {
    it('pages a thread of more than nine rows newest first, each page in order', async () => {
      const threadId = uid('thread');
      await t.app.get(ThreadsRepository).insert({ id: threadId, resourceId: owner });
      const messages = Array.from({ length: 12 }, (_, i) => ({
        id: `m${i + 1}`,
        role: 'user' as const,
        content: `message ${i + 1}`,
      }));
      const rows = placeMessages(threadId, messages).rows;
      await db((c) =>
        c.query(
          `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
           SELECT r.id, $1, r.content, r.role, 'v2', now() + r.n * interval '1 millisecond', $2
             FROM jsonb_to_recordset($3::jsonb) AS r(id text, content text, role text, n int)`,
          [threadId, owner, JSON.stringify(rows.map((r, n) => ({ ...r, n })))],
        ),
      );
      const list = t.app.get(MessagesRepository);
      const latest = await list.list(threadId, owner, { limit: 5 });
      expect(latest.flatMap(messagesOf).map((m) => m.id)).toEqual(['m8', 'm9', 'm10', 'm11', 'm12']);
      const before = await list.list(threadId, owner, { limit: 5, before: latest[0] });
      expect(before.flatMap(messagesOf).map((m) => m.id)).toEqual(['m3', 'm4', 'm5', 'm6', 'm7']);
    });

    it('a tool result goes into io-bridge’s row of its call, not into a copy a processor saved later', async () => {
      const threadId = uid('thread');
      await t.app.get(ThreadsRepository).insert({ id: threadId, resourceId: owner });
      const call = {
        id: uid('call'),
        type: 'function' as const,
        function: { name: 'pick_colour', arguments: '{}' },
      };
      const rows = placeMessages(threadId, [
        { id: uid('msg'), role: 'user', content: 'Pick a colour' },
        { id: uid('msg'), role: 'assistant', toolCalls: [call] },
      ]).rows;
      await db((c) =>
        c.query(
          `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
           SELECT r.id, $1, r.content, r.role, 'v2', now() - interval '1 minute' + r.n * interval '1 millisecond', $2
             FROM jsonb_to_recordset($3::jsonb) AS r(id text, content text, role text, n int)`,
          [threadId, owner, JSON.stringify(rows.map((r, n) => ({ ...r, n })))],
        ),
      );
      // The same call in a row io-bridge did not write (no metadata.agui), stored after its own.
      const copy = uid('copy');
      const invocation = { state: 'call', toolCallId: call.id, toolName: 'pick_colour', args: {} };
      await db((c) =>
        c.query(
          `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
           VALUES ($1, $2, $3, 'assistant', 'v2', now() - interval '30 seconds', $4)`,
          [
            copy,
            threadId,
            JSON.stringify({ format: 2, parts: [{ type: 'tool-invocation', toolInvocation: invocation }] }),
            owner,
          ],
        ),
      );
      const res = await fetch(t.runUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-resource-id': owner },
        body: JSON.stringify({
          threadId,
          runId: uid('run'),
          messages: [{ id: uid('msg'), role: 'tool', toolCallId: call.id, content: 'teal' }],
          tools: [],
          context: [],
          forwardedProps: { memory: { thread: threadId } },
        }),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('"RUN_FINISHED"');
      const stateOf = async (id: string) => {
        const row = await db((c) =>
          c.query<{ content: string }>(`SELECT content FROM mastra_messages WHERE id = $1`, [id]),
        );
        const parts = (
          JSON.parse(row.rows[0].content) as { parts: Array<{ toolInvocation?: { state: string } }> }
        ).parts;
        return parts.find((p) => p.toolInvocation)?.toolInvocation?.state;
      };
      expect(await stateOf(rows[1].id)).toBe('result');
      expect(await stateOf(copy)).toBe('call');
    });

    it('pages rows stored at the same microsecond by their ids, none twice and none left out', async () => {
      const threadId = uid('thread');
      await t.app.get(ThreadsRepository).insert({ id: threadId, resourceId: owner });
      const messages = Array.from({ length: 7 }, (_, i) => ({
        id: `m${i + 1}`,
        role: 'user' as const,
        content: `m${i + 1}`,
      }));
      const rows = placeMessages(threadId, messages).rows;
      // Mastra orders by time, then id: rows Mastra writes in one call can share a time.
      await db((c) =>
        c.query(
          `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
           SELECT r.id, $1, r.content, r.role, 'v2', '2026-12-07 05:00:00.123456', $2
             FROM jsonb_to_recordset($3::jsonb) AS r(id text, content text, role text)`,
          [threadId, owner, JSON.stringify(rows)],
        ),
      );
      const list = t.app.get(MessagesRepository);
      const pages: string[][] = [];
      let before: MessageRow | undefined;
      do {
        const page = await list.list(threadId, owner, { limit: 3, ...(before ? { before } : {}) });
        pages.push(page.map((r) => r.id));
        before = page.length === 3 ? page[0] : undefined;
      } while (before);
      const ids = pages.flat();
      expect(new Set(ids).size).toBe(7);
      expect(ids.sort()).toEqual(rows.map((r) => r.id).sort());
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages[0][0] > pages[1][2]).toBe(true);
    });

    it("another owner's thread and messages are neither read nor written", async () => {
      const threads = t.app.get(ThreadsRepository);
      const messages = t.app.get(MessagesRepository);
      const threadId = uid('thread');
      await threads.insert({ id: threadId, resourceId: owner });
      const call = { id: 'c1', type: 'function' as const, function: { name: 'weather', arguments: '{}' } };
      const asked = { id: 'm1', role: 'assistant' as const, toolCalls: [call] };
      const [row] = placeMessages(threadId, [asked]).rows;
      await db((c) =>
        c.query(
          `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
           VALUES ($1, $2, $3, 'assistant', 'v2', now(), $4)`,
          [row.id, threadId, row.content, owner],
        ),
      );

      expect(await threads.find(threadId, other)).toBeUndefined();
      expect(await threads.list(other, { limit: 10 })).toEqual([]);
      expect(await threads.update(threadId, other, { title: 'stolen' })).toBeUndefined();
      await threads.setTitleIfNone(threadId, other, 'stolen');
      expect(await threads.delete(threadId, other)).toBe(false);
      expect(await messages.list(threadId, other, { limit: 10 })).toEqual([]);
      expect(await messages.callers(threadId, other, ['c1'])).toEqual([]);

      expect(await threads.find(threadId, owner)).toMatchObject({ id: threadId, title: null });
      expect((await messages.list(threadId, owner, { limit: 10 })).flatMap(messagesOf)).toEqual([asked]);
      expect(await messages.callers(threadId, owner, ['c1'])).toHaveLength(1);
      expect(await threads.delete(threadId, owner)).toBe(true);
    });
  });
});
