/**
 * Issue 21: a run's cost in the database, with 1,000 and with 100,000 ended runs of the same owner
 * in the table. An embedded Postgres of its own (fresh each time, `pg_stat_statements` preloaded)
 * holds the service's database; the ended runs are written as a busy instance leaves them: started,
 * then ended with no vacuum since (autovacuum is off for the run tables meanwhile), so the partial
 * indexes of active runs still hold them while the statistics call those indexes empty.
 * Per phase: a new service (its pool plans every statement anew), warm-up runs (every connection
 * goes past the five calls after which Postgres may keep a generic plan), then measured runs; the
 * figures are pg_stat_statements' calls and shared buffers (hits + reads) over the measured runs.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import type { Agent } from '@mastra/core/agent';
import { createApp } from '../src/app.factory';
import { loadConfig } from '../src/config/config';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import type { RatioRow } from './ratios';
import { startPersistingAgUi } from './realistic-bench';

const OWNER = 'bench-db-cost-owner';
const PHASES = [1_000, 100_000];
const WARMUP_RUNS = 60;
const MEASURED_RUNS = 200;
const AT_ONCE = 10;
/** Issue 21: buffers per run with 100,000 ended runs at most 10 % above those with 1,000. */
const TARGET_GROWTH = 1.1;

export type DbCostPhase = {
  /** The service, or the persisting peer (`@ag-ui/mastra` with a Mastra Memory on `@mastra/pg`, its own database). */
  subject: 'service' | 'persisting peer';
  endedRuns: number;
  statementsPerRun: number;
  buffersPerRun: number;
  /** The statements costing the most buffers per run: calls per run, buffers per call, the start of the text. */
  top: Array<{ callsPerRun: number; buffersPerCall: number; query: string }>;
};

/**
 * A fresh embedded Postgres in `dir` with `pg_stat_statements` preloaded and created in its database:
 * the statements of every database of the cluster are counted (the durable part gives each build one).
 */
export async function startStatsPostgres(dir: string, port: number) {
  rmSync(dir, { recursive: true, force: true });
  const first = await startEmbeddedPostgres(dir, port);
  await withClient(first.url, (c) =>
    c.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`),
  );
  await first.stop();
  const pg = await startEmbeddedPostgres(dir, port);
  try {
    await withClient(pg.url, (c) => c.query('CREATE EXTENSION pg_stat_statements'));
  } catch (err) {
    await pg.stop();
    throw err;
  }
  return pg;
}

export async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Ended runs of OWNER up to `total`, not vacuumed since they ended: the partial indexes of active
 * runs still hold their entries, while the statistics (ANALYZE counts live rows) call them empty.
 */
async function endedRuns(c: Client, from: number, total: number): Promise<void> {
  for (const table of ['runs', 'run_events', 'run_tool_calls'])
    await c.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  await c.query(
    `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at, stateless)
     SELECT 'ended-' || g, 'ended-thread-' || (g % 1000), $1, 'assistant', 'running', now() + interval '1 hour', true
       FROM generate_series($2::int + 1, $3::int) g`,
    [OWNER, from, total],
  );
  await c.query(
    `INSERT INTO run_events (run_id, first_seq, last_seq, frames, terminal)
     SELECT 'ended-' || g, 1, 1, '', true FROM generate_series($1::int + 1, $2::int) g`,
    [from, total],
  );
  await c.query(
    `UPDATE runs SET status = 'finished', finished_at = now() WHERE id LIKE 'ended-%' AND status = 'running'`,
  );
  await c.query('ANALYZE');
}

function runBody(): string {
  const threadId = `db-cost-${randomUUID()}`;
  return JSON.stringify({
    threadId,
    runId: randomUUID(),
    messages: [{ id: randomUUID(), role: 'user', content: '/bench 20' }],
    tools: [],
    context: [],
    forwardedProps: { memory: { thread: threadId }, resourceId: OWNER },
  });
}

async function runs(url: string, count: number): Promise<void> {
  for (let done = 0; done < count; done += AT_ONCE) {
    await Promise.all(
      Array.from({ length: Math.min(AT_ONCE, count - done) }, async () => {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: runBody(),
        });
        const text = await res.text();
        if (res.status !== 200 || !text.includes('"type":"RUN_FINISHED"'))
          throw new Error(`db-cost run: HTTP ${res.status} ${text.slice(-300)}`);
      }),
    );
  }
}

/** What pg_stat_statements counted in the database of `url` since its last reset, per measured run. */
function measured(url: string): Promise<Omit<DbCostPhase, 'subject' | 'endedRuns'>> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ calls: string; buffers: string; query: string }>(
      `SELECT calls, shared_blks_hit + shared_blks_read AS buffers, query FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT LIKE '%pg_stat_statements%'`,
    );
    const calls = rows.reduce((n, r) => n + Number(r.calls), 0);
    const buffers = rows.reduce((n, r) => n + Number(r.buffers), 0);
    const top = rows
      .sort((a, b) => Number(b.buffers) - Number(a.buffers))
      .slice(0, 4)
      .map((r) => ({
        callsPerRun: Number(r.calls) / MEASURED_RUNS,
        buffersPerCall: Number(r.buffers) / Number(r.calls),
        query: r.query.replace(/\s+/g, ' ').slice(0, 60),
      }));
    return { statementsPerRun: calls / MEASURED_RUNS, buffersPerRun: buffers / MEASURED_RUNS, top };
  });
}

/**
 * The persisting peer's cost per run, in a database of its own in the same cluster: the same runs
 * (a new thread each, one owner), through its HTTP route, after the same warm-up.
 */
async function peerCost(
  clusterUrl: string,
  agent: Agent,
  progress: (what: string) => void,
): Promise<DbCostPhase> {
  await withClient(clusterUrl, (c) => c.query('CREATE DATABASE bench_peer'));
  const url = new URL(clusterUrl);
  url.pathname = '/bench_peer';
  await withClient(url.href, (c) => c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements'));
  const peer = await startPersistingAgUi(agent, url.href);
  try {
    progress('db-cost: the persisting peer');
    await runs(peer.url, WARMUP_RUNS);
    await withClient(url.href, (c) => c.query('SELECT pg_stat_statements_reset()'));
    await runs(peer.url, MEASURED_RUNS);
    await new Promise((r) => setTimeout(r, 1000));
    return { subject: 'persisting peer', endedRuns: WARMUP_RUNS, ...(await measured(url.href)) };
  } finally {
    await peer.close();
  }
}

export async function benchDbCost(
  env: NodeJS.ProcessEnv,
  progress: (what: string) => void,
  /** The agent the persisting peer serves (the built-in assistant): without it, the service alone. */
  agent?: Agent,
): Promise<DbCostPhase[]> {
  const pg = await startStatsPostgres('.data/bench-db-cost', Number(env.BENCH_DB_COST_PG_PORT ?? 54332));
  const phases: DbCostPhase[] = [];
  try {
    let ended = 0;
    for (const total of PHASES) {
      const config = loadConfig({ ...env, DATABASE_URL: pg.url });
      const app = await createApp(config);
      await app.listen(0, '127.0.0.1');
      try {
        progress(`db-cost: ${total.toLocaleString('en-US')} ended runs of one owner`);
        await withClient(pg.url, (c) => endedRuns(c, ended, total));
        ended = total;
        const { port: appPort } = app.getHttpServer().address() as AddressInfo;
        const url = `http://127.0.0.1:${appPort}${config.prefix}/run`;
        await runs(url, WARMUP_RUNS);
        await withClient(pg.url, (c) => c.query('SELECT pg_stat_statements_reset()'));
        await runs(url, MEASURED_RUNS);
        // The event log of the last runs is written after their streams end.
        await new Promise((r) => setTimeout(r, 1000));
        phases.push({ subject: 'service', endedRuns: total, ...(await measured(pg.url)) });
      } finally {
        await app.close();
      }
    }
    if (agent) phases.push(await peerCost(pg.url, agent, progress));
  } finally {
    await pg.stop();
  }
  return phases;
}

const fmt = (n: number, digits = 1) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function formatDbCost(phases: DbCostPhase[]): string {
  const lines = [
    `8. Database cost per run (pg_stat_statements, ${MEASURED_RUNS} runs of '/bench 20' by one owner, ${AT_ONCE} at a time, after ${WARMUP_RUNS} warm-up runs)`,
    `${'subject, ended runs in the table'.padEnd(40)}${'statements/run'.padStart(16)}${'buffers/run'.padStart(13)}`,
  ];
  const label = (p: DbCostPhase) =>
    p.subject === 'service'
      ? `service, ${p.endedRuns.toLocaleString('en-US')}`
      : `persisting peer, ${p.endedRuns} runs before`;
  for (const p of phases)
    lines.push(
      `${label(p).padEnd(40)}${fmt(p.statementsPerRun).padStart(16)}${fmt(p.buffersPerRun).padStart(13)}`,
    );
  for (const p of phases) {
    lines.push(`most buffers, ${label(p)} (calls/run, buffers/call, statement):`);
    for (const t of p.top)
      lines.push(`  ${fmt(t.callsPerRun, 2).padStart(6)} ${fmt(t.buffersPerCall).padStart(8)}  ${t.query}`);
  }
  return lines.join('\n');
}

/** Issue 34: the service's statements per stored run at most half the persisting peer's. */
const TARGET_STATEMENTS_VS_PEER = 0.5;

export function dbCostRatio(phases: DbCostPhase[]): RatioRow[] {
  const [small, large] = phases.filter((p) => p.subject === 'service');
  const peer = phases.find((p) => p.subject === 'persisting peer');
  const vsPeer: RatioRow[] =
    small && peer
      ? [
          {
            name: 'statements per stored run, service / persisting peer',
            figure: `${(small.statementsPerRun / peer.statementsPerRun).toFixed(2)}×`,
            target: `≤ ${TARGET_STATEMENTS_VS_PEER}×`,
            met: small.statementsPerRun / peer.statementsPerRun <= TARGET_STATEMENTS_VS_PEER,
            detail: `${fmt(small.statementsPerRun)} / ${fmt(peer.statementsPerRun)} statements, ${fmt(small.buffersPerRun)} / ${fmt(peer.buffersPerRun)} buffers`,
          },
        ]
      : [];
  if (!small || !large) return vsPeer;
  const r = large.buffersPerRun / small.buffersPerRun;
  return [
    ...vsPeer,
    {
      name: `buffers per run, ${large.endedRuns.toLocaleString('en-US')} / ${small.endedRuns.toLocaleString('en-US')} ended runs`,
      figure: `${r.toFixed(2)}×`,
      target: `≤ ${TARGET_GROWTH.toFixed(1)}×`,
      met: r <= TARGET_GROWTH,
      detail: `${fmt(large.buffersPerRun)} / ${fmt(small.buffersPerRun)} buffers, ${fmt(large.statementsPerRun)} / ${fmt(small.statementsPerRun)} statements`,
    },
  ];
}
