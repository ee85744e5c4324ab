import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { migrations } from '../../migrations';
import { OneThreadStore1764693100000 } from '../../migrations/1764693100000-one-thread-store';
import { ResponseBoundaries1764693200000 } from '../../migrations/1764693200000-response-boundaries';
import { messagesOf, placeMessages, rowId } from '../../src/threads/mastra-rows';
import type { StoredMessage } from '../../src/threads/message-format';

/** The migrations before the one under test: the schema io-bridge had when it kept threads itself. */
const BEFORE = migrations.slice(0, migrations.indexOf(OneThreadStore1764693100000));
/** Those and the one under test. */
const UP_TO = migrations.slice(0, migrations.indexOf(OneThreadStore1764693100000) + 1);

const A_MESSAGES: StoredMessage[] = [
  { id: 'u1', role: 'user', content: 'Weather in Paris?' },
  {
    id: 'a1',
    role: 'assistant',
    content: '',
    toolCalls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
  },
  { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"temp":20}' },
  { id: 'a2', role: 'assistant', content: 'It is 20 degrees in Paris.' },
];
const B_MESSAGES: StoredMessage[] = [
  { id: 'u1', role: 'user', content: 'Hi' },
  { id: 'a1', role: 'assistant', content: 'Hello!' },
];

type Row = { id: string; role: string; content: string; createdAt: Date; createdAtZ: Date };

/**
 * OneThreadStore1764693100000 on a database in the schema before it: io-bridge's threads and
 * messages move into Mastra's tables, thread by thread as the migration says (io-bridge's messages
 * win where both stores held a thread, Mastra's where it held it first, the owner in Mastra wins a
 * conflicting id), and the old tables stay under new names.
 */
describe('migration OneThreadStore1764693100000 on a database of the schema before it', () => {
  const database = `${process.env.E2E_DATABASE_NAME}_tsmig_${randomBytes(3).toString('hex')}`;
  const url = new URL(process.env.E2E_ADMIN_URL!);
  url.pathname = `/${database}`;
  let client: Client;

  const migrate = async (list: typeof migrations): Promise<string[]> => {
    const ds = new DataSource({
      type: 'postgres',
      url: url.toString(),
      entities: [],
      migrations: list,
      migrationsTableName: 'migrations',
      synchronize: false,
      logging: false,
    });
    await ds.initialize();
    try {
      return (await ds.runMigrations({ transaction: 'each' })).map((m) => m.name);
    } finally {
      await ds.destroy();
    }
  };

  const rowsOf = async (threadId: string): Promise<Row[]> =>
    (
      await client.query<Row>(
        `SELECT id, role, content, "createdAt", "createdAtZ" FROM mastra_messages WHERE thread_id = $1
          ORDER BY "createdAt", id`,
        [threadId],
      )
    ).rows;

  const threadOf = async (id: string) =>
    (
      await client.query<{
        resourceId: string;
        title: string;
        metadata: unknown;
        io_bridge_agent_id: string | null;
        io_bridge_last_message_at: Date | null;
        createdAtZ: Date;
        updatedAtZ: Date;
      }>(
        `SELECT "resourceId", title, metadata, io_bridge_agent_id, io_bridge_last_message_at, "createdAtZ", "updatedAtZ"
           FROM mastra_threads WHERE id = $1`,
        [id],
      )
    ).rows;

  const exists = async (table: string): Promise<boolean> =>
    (await client.query<{ t: string | null }>(`SELECT to_regclass($1)::text AS t`, [table])).rows[0].t !==
    null;

  const insertMessages = async (threadId: string, messages: StoredMessage[], firstAt: string) => {
    for (const [i, m] of messages.entries()) {
      await client.query(
        `INSERT INTO messages (thread_id, id, position, role, body, run_id, created_at)
         VALUES ($1, $2, $3::bigint, $4, $5, 'run-old', $6::timestamptz + $3::bigint * interval '1 second')`,
        [threadId, m.id, i + 1, m.role, JSON.stringify(m), firstAt],
      );
    }
  };

  const mastraRow = (id: string, threadId: string, owner: string, role: string, text: string, at: string) =>
    client.query(
      `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
       VALUES ($1, $2, $3, $4, 'v2', $5::timestamptz AT TIME ZONE 'UTC', $5::timestamptz, $6)`,
      [id, threadId, JSON.stringify({ format: 2, parts: [{ type: 'text', text }] }), role, at, owner],
    );

  const mastraThread = (id: string, owner: string, title: string, metadata: unknown, at: string) =>
    client.query(
      `INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt", "createdAtZ", "updatedAtZ")
       VALUES ($1, $2, $3, $4, $5::timestamptz AT TIME ZONE 'UTC', $5::timestamptz AT TIME ZONE 'UTC', $5, $5)`,
      [id, owner, title, JSON.stringify(metadata), at],
    );

  const oldThread = (
    id: string,
    owner: string,
    title: string | null,
    metadata: unknown,
    at: string,
    inMastra = false,
  ) =>
    client.query(
      `INSERT INTO threads (id, resource_id, agent_id, title, metadata, created_at, updated_at, messages_in_mastra)
       VALUES ($1, $2, 'assistant', $3, $4, $5::timestamptz, $5::timestamptz + interval '1 hour', $6)`,
      [id, owner, title, JSON.stringify(metadata), at, inMastra],
    );

  beforeAll(async () => {
    const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    await migrate(BEFORE);
    client = new Client({ connectionString: url.toString() });
    await client.connect();

    // A: io-bridge's only, a tool call and its result.
    await oldThread('thread-a', 'alice', 'Trip', { k: 1 }, '2025-01-01T09:00:00Z');
    await insertMessages('thread-a', A_MESSAGES, '2025-01-01T10:00:00Z');
    // B: both held it (an agent's Mastra memory saved its own copies), io-bridge first.
    await oldThread('thread-b', 'alice', null, { k: 2 }, '2025-01-02T09:00:00Z');
    await insertMessages('thread-b', B_MESSAGES, '2025-01-02T10:00:00Z');
    await mastraThread('thread-b', 'alice', '', { m: 1 }, '2025-01-02T09:00:00Z');
    await mastraRow('mastra-x', 'thread-b', 'alice', 'user', 'Hi', '2025-01-02T10:00:01Z');
    await mastraRow('mastra-y', 'thread-b', 'alice', 'assistant', 'Hello!', '2025-01-02T10:00:02Z');
    // C: Mastra's first; io-bridge kept a copy of its messages.
    await mastraThread('thread-c', 'bob', 'Mastra C', {}, '2025-01-03T09:00:00Z');
    await mastraRow('mastra-c1', 'thread-c', 'bob', 'user', 'From Mastra', '2025-01-03T10:00:01Z');
    await oldThread('thread-c', 'bob', 'Copy C', {}, '2025-01-03T09:00:00Z', true);
    await insertMessages(
      'thread-c',
      [{ id: 'copy-1', role: 'user', content: 'From Mastra' }],
      '2025-01-03T10:00:00Z',
    );
    // D: the same id, another owner in Mastra.
    await mastraThread('thread-d', 'carol', 'Carol', { c: 1 }, '2025-01-04T09:00:00Z');
    await mastraRow('mastra-d1', 'thread-d', 'carol', 'user', 'Carol here', '2025-01-04T10:00:01Z');
    await oldThread('thread-d', 'alice', 'Alice D', { a: 1 }, '2025-01-04T09:00:00Z');
    await insertMessages(
      'thread-d',
      [{ id: 'u1', role: 'user', content: 'Alice here' }],
      '2025-01-04T10:00:00Z',
    );
    // E: io-bridge's only, no title, no messages.
    await oldThread('thread-e', 'alice', null, {}, '2025-01-05T09:00:00Z');
    // F: both held it, but only Mastra's memory has messages of it.
    await oldThread('thread-f', 'alice', null, {}, '2025-01-06T09:00:00Z');
    await mastraThread('thread-f', 'alice', '', {}, '2025-01-06T09:00:00Z');
    await mastraRow('mastra-f1', 'thread-f', 'alice', 'user', 'Only in Mastra', '2025-01-06T10:00:01Z');

    expect(await migrate(UP_TO)).toEqual(['OneThreadStore1764693100000']);
  });

  afterAll(async () => {
    await client?.end();
    const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it("moves an io-bridge thread into mastra_threads with its owner, title, agent, metadata, times and last message's moment", async () => {
    const [a] = await threadOf('thread-a');
    expect(a).toEqual({
      resourceId: 'alice',
      title: 'Trip',
      metadata: { k: 1 },
      io_bridge_agent_id: 'assistant',
      io_bridge_last_message_at: new Date('2025-01-01T10:00:04Z'),
      createdAtZ: new Date('2025-01-01T09:00:00Z'),
      updatedAtZ: new Date('2025-01-01T10:00:00Z'),
    });
    const rows = await rowsOf('thread-a');
    const last = Math.max(...rows.map((r) => r.createdAtZ.getTime()));
    expect(a.io_bridge_last_message_at!.getTime()).toBe(last);
    // A thread with no title has Mastra's '' for none; one with no messages no last moment.
    const [e] = await threadOf('thread-e');
    expect(e).toMatchObject({ resourceId: 'alice', title: '', io_bridge_agent_id: 'assistant' });
    expect(e.io_bridge_last_message_at).toBeNull();
    expect(await rowsOf('thread-e')).toEqual([]);
  });

  it('places its messages in rows, a tool result in the row of its call, read back exactly and in order', async () => {
    const rows = await rowsOf('thread-a');
    expect(rows.map((r) => r.id)).toEqual([
      rowId('thread-a', 'u1'),
      rowId('thread-a', 'a1'),
      rowId('thread-a', 'a2'),
    ]);
    expect(rows.map((r) => r.role)).toEqual(['user', 'assistant', 'assistant']);
    expect(rows.flatMap((r) => messagesOf(r))).toEqual(A_MESSAGES);
    // Each row at its first message's moment: t1 (10:00:03) went into a1's row.
    expect(rows.map((r) => r.createdAtZ.toISOString())).toEqual([
      '2025-01-01T10:00:01.000Z',
      '2025-01-01T10:00:02.000Z',
      '2025-01-01T10:00:04.000Z',
    ]);
    for (let i = 1; i < rows.length; i++)
      expect(rows[i].createdAtZ.getTime()).toBeGreaterThan(rows[i - 1].createdAtZ.getTime());
    const { rows: types } = await client.query<{ type: string; resourceId: string }>(
      `SELECT DISTINCT type, "resourceId" FROM mastra_messages WHERE thread_id = 'thread-a'`,
    );
    expect(types).toEqual([{ type: 'v2', resourceId: 'alice' }]);
    const call = JSON.parse(rows[1].content) as { parts: Array<{ type: string; toolInvocation?: unknown }> };
    expect(call.parts.filter((p) => p.type === 'tool-invocation')).toEqual([
      {
        type: 'tool-invocation',
        toolInvocation: {
          state: 'result',
          toolCallId: 'c1',
          toolName: 'weather',
          args: { city: 'Paris' },
          result: { temp: 20 },
        },
      },
    ]);
    // The same as the service places them now (jsonb kept the old bodies, not their keys' order).
    const parsed = (list: Array<{ id: string; role: string; content: string }>) =>
      list.map(({ id, role, content }) => ({ id, role, content: JSON.parse(content) as unknown }));
    expect(parsed(rows)).toEqual(parsed(placeMessages('thread-a', A_MESSAGES).rows));
  });

  it("keeps io-bridge's messages of a thread both held and drops Mastra's copies; the same message id in two threads makes two rows", async () => {
    const rows = await rowsOf('thread-b');
    expect(rows.map((r) => r.id)).toEqual([rowId('thread-b', 'u1'), rowId('thread-b', 'a1')]);
    expect(rows.flatMap((r) => messagesOf(r))).toEqual(B_MESSAGES);
    const { rows: gone } = await client.query(
      `SELECT id FROM mastra_messages WHERE id IN ('mastra-x', 'mastra-y')`,
    );
    expect(gone).toEqual([]);
    expect(rowId('thread-b', 'u1')).not.toBe(rowId('thread-a', 'u1'));
    const { rows: u1 } = await client.query<{ thread_id: string }>(
      `SELECT thread_id FROM mastra_messages WHERE id = ANY($1::text[]) ORDER BY thread_id`,
      [[rowId('thread-a', 'u1'), rowId('thread-b', 'u1')]],
    );
    expect(u1.map((r) => r.thread_id)).toEqual(['thread-a', 'thread-b']);
    const [b] = await threadOf('thread-b');
    expect(b).toMatchObject({
      resourceId: 'alice',
      title: '',
      io_bridge_agent_id: 'assistant',
      metadata: { m: 1, k: 2 },
      io_bridge_last_message_at: new Date('2025-01-02T10:00:02Z'),
    });
  });

  it("keeps Mastra's rows of a thread Mastra held first, and not io-bridge's copy", async () => {
    const rows = await rowsOf('thread-c');
    expect(rows.map((r) => r.id)).toEqual(['mastra-c1']);
    const { rows: copies } = await client.query(`SELECT id FROM mastra_messages WHERE id = ANY($1::text[])`, [
      ['copy-1', rowId('thread-c', 'copy-1')],
    ]);
    expect(copies).toEqual([]);
    const [c] = await threadOf('thread-c');
    expect(c).toMatchObject({
      resourceId: 'bob',
      title: 'Mastra C',
      io_bridge_agent_id: 'assistant',
      io_bridge_last_message_at: new Date('2025-01-03T10:00:01Z'),
    });
  });

  it('leaves a thread id another owner holds in Mastra to that owner', async () => {
    const [d] = await threadOf('thread-d');
    expect(d).toMatchObject({
      resourceId: 'carol',
      title: 'Carol',
      metadata: { c: 1 },
      io_bridge_agent_id: null,
    });
    expect((await rowsOf('thread-d')).map((r) => r.id)).toEqual(['mastra-d1']);
    const { rows: old } = await client.query(
      `SELECT resource_id, title FROM threads_before_mastra WHERE id = 'thread-d'`,
    );
    expect(old).toEqual([{ resource_id: 'alice', title: 'Alice D' }]);
    const { rows: oldMessages } = await client.query(
      `SELECT id FROM messages_before_mastra WHERE thread_id = 'thread-d'`,
    );
    expect(oldMessages).toEqual([{ id: 'u1' }]);
  });

  it('renames the old tables, rows and all', async () => {
    expect(await exists('threads')).toBe(false);
    expect(await exists('messages')).toBe(false);
    expect(await exists('threads_before_mastra')).toBe(true);
    expect(await exists('messages_before_mastra')).toBe(true);
    const { rows } = await client.query<{ threads: number; messages: number }>(
      `SELECT (SELECT count(*)::int FROM threads_before_mastra) AS threads,
              (SELECT count(*)::int FROM messages_before_mastra) AS messages`,
    );
    expect(rows).toEqual([{ threads: 6, messages: 8 }]);
    const { rows: all } = await client.query<{ id: string }>(`SELECT id FROM mastra_threads ORDER BY id`);
    expect(all.map((t) => t.id)).toEqual([
      'thread-a',
      'thread-b',
      'thread-c',
      'thread-d',
      'thread-e',
      'thread-f',
    ]);
  });

  it("keeps Mastra's rows of a thread both held where io-bridge has no messages of it", async () => {
    expect((await rowsOf('thread-f')).map((r) => r.id)).toEqual(['mastra-f1']);
  });

  it('io_bridge_answered sets the result of a call once and lists its message once; io_bridge_parts reads any content', async () => {
    const caller: StoredMessage = {
      id: 'a9',
      role: 'assistant',
      toolCalls: [
        { id: 'c9', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
        { id: 'c10', type: 'function', function: { name: 'other', arguments: '{}' } },
      ],
    };
    const [row] = placeMessages('thread-f', [caller]).rows;
    const answer: StoredMessage = { id: 't9', role: 'tool', toolCallId: 'c9', content: '{"ok":true}' };
    const answers = [{ toolCallId: 'c9', result: { ok: true }, message: answer }];
    const answered = async (content: string): Promise<string> =>
      (
        await client.query<{ c: string }>(`SELECT io_bridge_answered($1, $2::jsonb) AS c`, [
          content,
          JSON.stringify(answers),
        ])
      ).rows[0].c;

    const once = JSON.parse(await answered(row.content)) as {
      format: number;
      parts: Array<{ type: string; toolInvocation?: Record<string, unknown> }>;
      metadata: { agui: StoredMessage[] };
    };
    expect(once.format).toBe(2);
    expect(once.parts.filter((p) => p.type === 'tool-invocation').map((p) => p.toolInvocation)).toEqual([
      { state: 'result', toolCallId: 'c9', toolName: 'lookup', args: { q: 'x' }, result: { ok: true } },
      { state: 'call', toolCallId: 'c10', toolName: 'other', args: {} },
    ]);
    expect(once.metadata.agui).toEqual([caller, answer]);
    const twice = JSON.parse(await answered(JSON.stringify(once))) as typeof once;
    expect(twice).toEqual(once);

    const parts = async (content: string): Promise<unknown> =>
      (await client.query<{ p: unknown }>(`SELECT io_bridge_parts($1) AS p`, [content])).rows[0].p;
    expect(await parts('not json')).toEqual([]);
    expect(await parts('{"format":2}')).toEqual([]);
    expect(await parts(row.content)).toEqual(JSON.parse(row.content).parts);
  });

  it('then ResponseBoundaries1764693200000 marks the assistant rows io-bridge stored without the mark, and nothing else', async () => {
    const [a] = placeMessages('thread-g', [{ id: 'g1', role: 'assistant', content: 'Old answer' }]).rows;
    const unmarked = JSON.parse(a.content) as { metadata: Record<string, unknown> };
    delete unmarked.metadata.mastra;
    const rows: Array<[string, string, string]> = [
      ['io-bridge-old', 'assistant', JSON.stringify(unmarked)],
      [
        'mastra-own',
        'assistant',
        JSON.stringify({ format: 2, parts: [{ type: 'text', text: 'Mastra said' }] }),
      ],
      ['not-json', 'assistant', 'text with "agui": in it'],
      [
        'io-bridge-user',
        'user',
        placeMessages('thread-g', [{ id: 'g0', role: 'user', content: 'Hi' }]).rows[0].content,
      ],
    ];
    for (const [id, role, content] of rows)
      await client.query(
        `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
         VALUES ($1, 'thread-g', $2, $3, 'v2', now() AT TIME ZONE 'UTC', now(), 'alice')`,
        [id, content, role],
      );
    expect(
      await migrate(migrations.slice(0, migrations.indexOf(ResponseBoundaries1764693200000) + 1)),
    ).toEqual(['ResponseBoundaries1764693200000']);
    const after = new Map(
      (
        await client.query<{ id: string; content: string }>(
          `SELECT id, content FROM mastra_messages WHERE thread_id = 'thread-g'`,
        )
      ).rows.map((r) => [r.id, r.content]),
    );
    expect(JSON.parse(after.get('io-bridge-old')!)).toEqual(JSON.parse(a.content));
    expect(JSON.parse(after.get('io-bridge-old')!).metadata.mastra).toEqual({ responseBoundary: true });
    for (const [id, , content] of rows.slice(1)) expect(after.get(id)).toBe(content);
    // Rows the move placed were marked as they were written.
    const [, call] = await rowsOf('thread-a');
    expect(JSON.parse(call.content).metadata.mastra).toEqual({ responseBoundary: true });
    // A result written into a row marks it, a row Mastra wrote too (its other metadata kept).
    const mastraCall = {
      format: 2,
      parts: [
        {
          type: 'tool-invocation',
          toolInvocation: { state: 'call', toolCallId: 'c7', toolName: 'x', args: {} },
        },
      ],
      metadata: { mastra: { other: 1 }, k: 'v' },
    };
    const answer = { id: 't7', role: 'tool', toolCallId: 'c7', content: '"ok"' };
    const { rows: answered } = await client.query<{ c: string }>(
      `SELECT io_bridge_answered($1, $2::jsonb) AS c`,
      [JSON.stringify(mastraCall), JSON.stringify([{ toolCallId: 'c7', result: 'ok', message: answer }])],
    );
    expect(JSON.parse(answered[0].c)).toEqual({
      format: 2,
      parts: [
        {
          type: 'tool-invocation',
          toolInvocation: { state: 'result', toolCallId: 'c7', toolName: 'x', args: {}, result: 'ok' },
        },
      ],
      metadata: { mastra: { other: 1, responseBoundary: true }, k: 'v' },
    });
  });

  it('then RunEventsFencedOnly1764693300000 drops the foreign key of run_events, its rows kept', async () => {
    const keys = () =>
      client.query(
        `SELECT conname FROM pg_constraint WHERE conrelid = 'run_events'::regclass AND contype = 'f'`,
      );
    expect((await keys()).rows).toEqual([{ conname: 'run_events_run_id_fkey' }]);
    const before = await client.query('SELECT count(*)::int AS n FROM run_events');
    expect(await migrate(migrations)).toEqual(['RunEventsFencedOnly1764693300000']);
    expect((await keys()).rows).toEqual([]);
    expect((await client.query('SELECT count(*)::int AS n FROM run_events')).rows).toEqual(before.rows);
  });
});
