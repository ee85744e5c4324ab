import { Client } from 'pg';
import { eventually, startApp, TestApp } from '../support/app';
import { memoryOf, openRun, runInput, runToFrames, uid } from '../support/sse';

const OWNER = 'plans-owner';
const ENDED_RUNS = Number(process.env.PLANS_ROWS ?? 100_000);
/** A run's rows, found by primary key: anything else makes a run's cost grow with the table. */
const BY_KEY: Record<string, string[]> = {
  runs: ['runs_pkey', 'runs_id_attempt_key'],
  run_events: ['run_events_pkey'],
  run_tool_calls: ['run_tool_calls_pkey'],
  mastra_threads: ['mastra_threads_pkey'],
  // A thread's messages: by their ids, or by the index that leads with thread_id.
  mastra_messages: ['mastra_messages_pkey', 'mastra_messages_thread_id_createdat_idx'],
};
/**
 * The claim's budget check: the owner's runs that ended within the window, an index-only range read
 * only when the owner has a budget (the one scan of `runs` not by key, in the statement that names owner_quotas).
 */
const BUDGET_RANGE = { statement: /owner_quotas/, scan: 'runs via runs_owner_tokens_idx' };
/**
 * The run's end: the thread's run before it (its span, for the copies its memory saved as it wound
 * down: store-rows.ts `runSpans`), the newest entry of the owner's thread in its index, one probe
 * whatever the table holds.
 */
const RUN_BEFORE = { statement: /runs_ended AS/, scan: 'runs via runs_resource_thread_started_idx' };
/** Statements that are not a run's: the reaper looks for lapsed leases across all runs (the lease index's job). */
const NOT_PER_RUN = [/lease_expires_at < now\(\)/, /finished_at < now\(\)/];

type Statement = { text: string; values?: unknown[] };
type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
};

/** Every scan in a plan: `table via index`, or `table via Seq Scan` (a bitmap scan names its index scans). */
function scans(node: PlanNode): string[] {
  const table = node['Relation Name'];
  const via =
    !table || node['Node Type'] === 'ModifyTable'
      ? []
      : node['Node Type'] === 'Bitmap Heap Scan'
        ? (node.Plans ?? []).flatMap(function indexes(n: PlanNode): string[] {
            return [...(n['Index Name'] ? [n['Index Name']] : []), ...(n.Plans ?? []).flatMap(indexes)];
          })
        : [node['Index Name'] ?? node['Node Type']];
  return [...via.map((v) => `${table} via ${v}`), ...(node.Plans ?? []).flatMap(scans)];
}

/** A captured value in the text form the pool sends it in (the service passes text, numbers, booleans, arrays of them). */
function textOf(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value))
    return `{${value.map((v) => (v === null ? 'NULL' : JSON.stringify(typeof v === 'string' ? v : JSON.stringify(v)))).join(',')}}`;
  // Text as it is; numbers, booleans and objects in their JSON form (the text form Postgres reads).
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the browser for the user city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/**
 * A run's cost in the database does not grow with the table. The statements of real runs
 * (claim, event log, lease renewal and checkpoint, tool calls, end) are captured on the pool, then
 * planned as the pool runs them after a few calls: a generic plan (plan_cache_mode =
 * force_generic_plan), on a table of 100,000 ended runs of the same owner, ended with no vacuum
 * since (the partial indexes of active runs still hold them, while the statistics call those
 * indexes empty). Every scan of a run's tables must use their primary key.
 */
describe('per-run statements find their rows by primary key whatever the plan', () => {
  const database = `${process.env.E2E_DATABASE_NAME}_plans`;
  const url = new URL(process.env.E2E_ADMIN_URL!);
  url.pathname = `/${database}`;
  let t: TestApp;
  const captured = new Map<string, Statement>();

  const sql = async <T>(fn: (c: Client) => Promise<T>): Promise<T> => {
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    // Renewals every 2 s and checkpoints every second, so a run of a few seconds sends both.
    t = await startApp({ DATABASE_URL: url.toString(), RUN_LEASE_MS: '6000' });
    await sql(async (c) => {
      for (const table of ['runs', 'run_events', 'run_tool_calls', 'mastra_messages', 'mastra_threads'])
        await c.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
      await c.query(
        `INSERT INTO mastra_threads (id, "resourceId", io_bridge_agent_id, title, metadata, "createdAt", "updatedAt",
                                     "createdAtZ", "updatedAtZ")
         SELECT 'plans-thread-' || g, $1, 'assistant', '', '{}', now(), now(), now(), now() FROM generate_series(1, 1000) g`,
        [OWNER],
      );
      await c.query(
        `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
         SELECT 'plans-msg-' || g, 'plans-thread-' || (g % 1000 + 1), '{"format":2,"parts":[]}', 'user', 'v2',
                now() + g * interval '1 millisecond', now() + g * interval '1 millisecond', $2
           FROM generate_series(1, $1::int) g`,
        [ENDED_RUNS, OWNER],
      );
      await c.query(
        `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at, stateless)
         SELECT 'plans-run-' || g, 'plans-thread-' || (g % 1000 + 1), $1, 'assistant', 'running', now() + interval '1 hour', true
           FROM generate_series(1, $2::int) g`,
        [OWNER, ENDED_RUNS],
      );
      await c.query(
        `INSERT INTO run_events (run_id, first_seq, last_seq, frames, terminal) SELECT id, 1, 1, '', true FROM runs WHERE id LIKE 'plans-run-%'`,
      );
      await c.query(
        `INSERT INTO run_tool_calls (run_id, tool_call_id, tool_name, status) SELECT id, 'call', 'get_city', 'done' FROM runs WHERE id LIKE 'plans-run-%'`,
      );
      // Ended with no vacuum since, as runs end between two autovacuums: the partial indexes of active
      // runs still hold their entries, while the statistics (ANALYZE counts live rows) call them empty.
      await c.query(
        `UPDATE runs SET status = 'finished', finished_at = now(), lease_expires_at = NULL WHERE id LIKE 'plans-run-%'`,
      );
      await c.query('ANALYZE');
    });

    // Every statement the service sends while the runs below go on, as the pool sends it.
    const spy = jest.spyOn(Client.prototype, 'query');
    try {
      const stored = (text: string, extra: Record<string, unknown> = {}) => {
        const threadId = uid('thread');
        return runInput(text, {
          threadId,
          forwardedProps: memoryOf(threadId),
          ...extra,
        });
      };
      const plain = await runToFrames(t.runUrl, stored('hello there'));
      expect(plain.res.status).toBe(200);
      // Five deltas 700 ms apart: long enough for a renewal and checkpoints.
      const slow = await runToFrames(t.runUrl, stored('/slow 700 one two three four'));
      expect(slow.res.status).toBe(200);
      const input = stored('/tool get_city {"city":"Paris"}', { tools: [GET_CITY] });
      const run = await openRun(t.runUrl, input);
      const end = await run.waitFor((e) => e.type === 'TOOL_CALL_END');
      await eventually(async () => {
        const res = await fetch(
          `${t.baseUrl}/io-bridge/runs/${input.runId}/tool-calls/${end.toolCallId}/result`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ content: { city: 'Lyon' } }),
          },
        );
        if (res.status !== 202) console.log('tool result', res.status, await res.text());
        return res.status === 202 ? true : undefined;
      });
      await run.done;
      for (const [first, second] of spy.mock.calls as unknown as Array<[string | Statement, unknown]>) {
        const statement =
          typeof first === 'string'
            ? { text: first, values: Array.isArray(second) ? second : [] }
            : { text: first.text, values: first.values ?? [] };
        if (/\b(runs|run_events|run_tool_calls)\b/.test(statement.text))
          captured.set(statement.text, statement);
      }
    } finally {
      spy.mockRestore();
    }
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    const admin = new Client({ connectionString: process.env.E2E_ADMIN_URL });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it('captured the statements of a run: claim, event log, renewal, checkpoint, tool calls, end', () => {
    const texts = [...captured.keys()].join('\n');
    for (const part of [
      'INSERT INTO runs',
      'INSERT INTO run_events',
      'lease_expires_at = now()',
      'checkpoint =',
    ]) {
      expect(texts).toContain(part);
    }
    expect(texts).toContain('INSERT INTO run_tool_calls');
    expect(texts).toMatch(/UPDATE runs SET status = \$3/);
  });

  it('plans every one of them, generically, with a scan of a run table only by its primary key', async () => {
    const perRun = [...captured.values()].filter((s) => !NOT_PER_RUN.some((re) => re.test(s.text)));
    const wrong: string[] = [];
    await sql(async (c) => {
      await c.query('SET plan_cache_mode = force_generic_plan');
      for (const [i, s] of perRun.entries()) {
        await c.query(`PREPARE s${i} AS ${s.text}`);
        // EXECUTE takes no bind parameters: the captured values go in as literals, each as the pool sends it.
        const literals = (s.values ?? []).map((v) => {
          const text = textOf(v);
          return text === null ? 'NULL' : c.escapeLiteral(text);
        });
        const { rows } = await c.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (FORMAT JSON) EXECUTE s${i}${literals.length ? `(${literals.join(', ')})` : ''}`,
        );
        const bad = scans(rows[0]['QUERY PLAN'][0].Plan).filter((scan) => {
          const [table, index] = scan.split(' via ');
          if (BUDGET_RANGE.statement.test(s.text) && scan === BUDGET_RANGE.scan) return false;
          if (RUN_BEFORE.statement.test(s.text) && scan === RUN_BEFORE.scan) return false;
          return table in BY_KEY && !BY_KEY[table].includes(index);
        });
        if (bad.length) wrong.push(`${bad.join(', ')} in:\n${s.text}`);
      }
    });
    expect(perRun.length).toBeGreaterThanOrEqual(5);
    expect(wrong).toEqual([]);
  });
});
