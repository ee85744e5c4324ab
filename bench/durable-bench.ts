/**
 * Issue 25's durable-run figures (`BENCH_ONLY=durable`), against built replicas (`node dist/src/main.js`,
 * child processes on one database, `RUN_LEASE_MS` 3 s as in test/durability/durable-runs.e2e-spec.ts):
 * 1. `kill -9` (a real SIGKILL) of the replica streaming an answer, several times: the time from the
 *    kill to the continued answer's RUN_FINISHED on another replica, against the lease + 2 s; whether
 *    the thread holds the answer once and a reader sees one well-formed stream;
 * 2. a rolling restart of 3 replicas with 30 live runs, as Kubernetes does it (SIGTERM one, wait for
 *    it to exit, start its successor, wait until ready, next): how many finish, how many end
 *    INTERRUPTED, messages stored twice, and how long the restart took;
 * 3. what continuation costs a normal run (bench/continuation-cost.ts).
 * The runs' answers come from the scripted model: `/slow <ms> <words>` streams a word every <ms>.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { MAIN, startBuiltService, type BuiltService } from '../test/support/built-service';
import { followRun, rawLog, rejoin, turn, verified, words } from '../test/support/durable';
import { openRun, parseFrames, type Frame } from '../test/support/sse';
import { messagesOf } from '../src/threads/mastra-rows';
import type { MastraRow } from '../src/threads/mastra-format';
import { assertStreamRules } from '../test/support/stream-rules';
import { benchContinuationCost, costTargets, formatCost, type CostResult } from './continuation-cost';
import { startStatsPostgres, withClient } from './db-cost';
import type { RatioRow } from './ratios';

/** As in test/durability/durable-runs.e2e-spec.ts; `BENCH_DURABLE_LEASE_MS` sets another (a loaded machine renews late). */
const LEASE_MS = Number(process.env.BENCH_DURABLE_LEASE_MS ?? 3000);
const GRACE_MS = 3000;
const KILLS = 6;
/** A 16-word answer, a word every 50 ms (about 1 s): the kill comes after its third word. */
const KILL_PROMPT = { ms: 50, words: 16 };
const ROLLING_RUNS = 30;
/** A 60-word answer, a word every 400 ms (about 25 s an attempt): the runs stay live while replicas restart. */
const ROLLING_PROMPT = { ms: 400, words: 60 };
/** A run whose client has not seen its end this long after the restart began counts as not finished. */
const ROLLING_TIMEOUT_MS = 240_000;

export type KillTrial = { killToFinishedMs: number; killToContinuedMs: number; problems: string[] };
export type RollingResult = {
  finished: number;
  interrupted: number;
  otherEnds: string[];
  storedTwice: number;
  restartMs: number;
  allEndedMs: number;
  liveAtSigterm: number[];
  moved: number;
  problems: string[];
};
export type DurableResult = {
  answerAloneMs: number;
  kills: KillTrial[];
  rolling: RollingResult;
  cost: CostResult | string;
};

const sameEvents = (a: Frame[], b: Frame[]) =>
  JSON.stringify(a.map((f) => f.event)) === JSON.stringify(b.map((f) => f.event));

/** Replicas of this build on `databaseUrl`, each killable or stoppable; `stopAll` ends those left. */
function replicaSet(databaseUrl: string) {
  const started: BuiltService[] = [];
  const start = async () => {
    const s = await startBuiltService(
      {
        DATABASE_URL: databaseUrl,
        LOG_LEVEL: 'log',
        RUN_LEASE_MS: String(LEASE_MS),
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
      },
      60_000,
      MAIN,
    );
    started.push(s);
    return s;
  };
  return { start, stopAll: () => Promise.all(started.map((s) => s.stop())) };
}

/** The rows of these threads (Mastra's memory, `mastra_messages`), each thread's in its order. */
async function rowsOf(db: Client, threadIds: string[]) {
  const { rows } = await db.query<MastraRow & { thread_id: string }>(
    `SELECT thread_id, id, role, content, COALESCE("createdAtZ", "createdAt" AT TIME ZONE 'UTC') AS "createdAt"
       FROM mastra_messages WHERE thread_id = ANY($1::text[]) ORDER BY thread_id, "createdAt", id`,
    [threadIds],
  );
  return rows;
}

/** The thread's stored messages (the AG-UI messages its rows stand for): role and text, in order. */
async function stored(db: Client, threadId: string) {
  const rows = await rowsOf(db, [threadId]);
  return rows.flatMap(messagesOf).map((m) => ({ role: m.role, content: m.content }));
}

/** One kill: `a` streams the answer and is killed after its third word; `b` is rejoined, `c` read after. */
async function killTrial(db: Client, [a, b, c]: BuiltService[]): Promise<KillTrial> {
  const threadId = `durable-kill-${randomUUID()}`;
  const input = turn(threadId, `/slow ${KILL_PROMPT.ms} ${words(KILL_PROMPT.words)}`);
  const live = await openRun(`${a.base}/run`, input);
  await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta.includes('w3'), 15_000);
  a.kill();
  const killedAt = performance.now();
  await live.done.catch(() => undefined);
  const seen = [...live.frames];
  const problems: string[] = [];
  const cut = seen.find((f) => f.event.type === 'TEXT_MESSAGE_START')?.event.messageId;
  const rest = await rejoin(b.base, input.runId, seen.at(-1)!.id, LEASE_MS + 30_000);
  let continuedAt = NaN;
  let finishedAt = NaN;
  rest.onEvent((e) => {
    if (Number.isNaN(continuedAt) && e.type === 'TEXT_MESSAGE_CONTENT' && e.messageId !== cut)
      continuedAt = performance.now();
    if (e.type === 'RUN_FINISHED') finishedAt = performance.now();
  });
  const tail = await rest.done.catch((err: unknown) => {
    problems.push(`rejoin: ${String(err)}`);
    return rest.frames;
  });
  if (rest.res.status !== 200) problems.push(`rejoin answered ${rest.res.status}`);
  if (tail[0]?.id !== seen.at(-1)!.id + 1) problems.push('the rejoin did not go on after the last id');
  const whole = [...seen, ...tail];
  try {
    assertStreamRules(whole, input);
    if (whole.at(-1)!.event.type !== 'RUN_FINISHED') problems.push(`ended ${whole.at(-1)!.event.type}`);
    if ((await verified(whole)) !== whole.length) problems.push('@ag-ui/client verifier stopped early');
  } catch (err) {
    problems.push(`stream: ${String(err)}`);
  }
  const fromC = parseFrames(await rawLog(c.base, input.runId)).frames;
  if (!sameEvents(fromC, whole)) problems.push('another replica serves a different log');
  const messages = await stored(db, threadId);
  const expected = [
    { role: 'user', content: input.messages[0].content },
    { role: 'assistant', content: `You said: ${words(KILL_PROMPT.words)}` },
  ];
  if (JSON.stringify(messages) !== JSON.stringify(expected))
    problems.push(`thread holds ${JSON.stringify(messages)}`);
  return { killToFinishedMs: finishedAt - killedAt, killToContinuedMs: continuedAt - killedAt, problems };
}

async function rollingRestart(db: Client, replicas: BuiltService[], start: () => Promise<BuiltService>) {
  const alive = new Set(replicas);
  const anyBase = () => [...alive][Math.floor(Math.random() * alive.size)].base;
  const prompt = `/slow ${ROLLING_PROMPT.ms} ${words(ROLLING_PROMPT.words)}`;
  const inputs = Array.from({ length: ROLLING_RUNS }, () => turn(`durable-rolling-${randomUUID()}`, prompt));
  const ids = inputs.map((i) => i.runId);
  const problems: string[] = [];
  let lastEnd = 0;
  const streams = inputs.map((input, i) =>
    followRun(input, replicas[i % replicas.length].base, anyBase).then(
      (followed) => {
        lastEnd = performance.now();
        return followed;
      },
      (err: unknown) => {
        problems.push(`${input.runId}: ${String(err)}`);
        return undefined;
      },
    ),
  );
  const count = async (sql: string) =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, [ids])).rows[0].n;
  // Every run streams before the restart begins.
  for (
    let t = Date.now();
    (await count('run_events WHERE run_id = ANY($1) AND first_seq = 1')) < ids.length;
  ) {
    if (Date.now() - t > 60_000) throw new Error('the rolling restart runs did not all start within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const t0 = performance.now();
  const liveAtSigterm: number[] = [];
  for (let i = 0; i < replicas.length; i++) {
    liveAtSigterm.push(await count(`runs WHERE id = ANY($1) AND status = 'running'`));
    alive.delete(replicas[i]);
    await replicas[i].stop();
    replicas[i] = await start();
    alive.add(replicas[i]);
  }
  const restartMs = performance.now() - t0;
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ROLLING_TIMEOUT_MS).unref());
  const followed = await Promise.race([Promise.all(streams), timeout]);
  const allEndedMs = lastEnd - t0;
  if (followed === 'timeout') problems.push(`not all streams ended within ${ROLLING_TIMEOUT_MS} ms`);
  let moved = 0;
  if (followed !== 'timeout')
    followed.forEach((f, i) => {
      if (!f) return;
      moved += f.moved;
      try {
        assertStreamRules(f.frames, inputs[i]);
      } catch (err) {
        problems.push(`${inputs[i].runId}: ${String(err)}`);
      }
    });
  const { rows: runs } = await db.query<{
    thread_id: string;
    status: string;
    error_code: string | null;
    error_message: string | null;
  }>(`SELECT thread_id, status, error_code, error_message FROM runs WHERE id = ANY($1)`, [ids]);
  // Each run's thread: its AG-UI messages (those its rows stand for) and their distinct texts.
  const threadRows = await rowsOf(
    db,
    runs.map((r) => r.thread_id),
  );
  const rows = runs.map((r) => {
    const messages = threadRows.filter((m) => m.thread_id === r.thread_id).flatMap(messagesOf);
    const texts = messages
      .filter((m) => m.content !== undefined && m.content !== null)
      .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
    return { ...r, messages: messages.length, distinct: new Set(texts).size };
  });
  const end = (r: (typeof rows)[number]) =>
    `${r.status}${r.error_code ? ` ${r.error_code} (${r.error_message})` : ''}`;
  return {
    finished: rows.filter((r) => r.status === 'finished').length,
    interrupted: rows.filter((r) => r.error_code === 'INTERRUPTED').length,
    otherEnds: rows.filter((r) => r.status !== 'finished' && r.error_code !== 'INTERRUPTED').map(end),
    // Each thread holds its user message and one answer: any other row is a message stored twice.
    storedTwice: rows.reduce((n, r) => n + (r.messages - r.distinct) + Math.max(0, r.distinct - 2), 0),
    restartMs,
    allEndedMs,
    liveAtSigterm,
    moved,
    problems,
  };
}

export async function benchDurable(
  env: NodeJS.ProcessEnv,
  progress: (what: string) => void,
): Promise<DurableResult> {
  const pg = await startStatsPostgres('.data/bench-durable', Number(env.BENCH_DURABLE_PG_PORT ?? 54333));
  const url = (database: string) => {
    const u = new URL(pg.url);
    u.pathname = `/${database}`;
    return u.toString();
  };
  await withClient(pg.url, async (c) => {
    for (const name of ['durable', 'cost_current', 'cost_baseline']) await c.query(`CREATE DATABASE ${name}`);
  });
  const db = new Client({ connectionString: url('durable') });
  await db.connect();
  const set = replicaSet(url('durable'));
  try {
    progress(`durable: starting 3 replicas (built, one database, lease ${LEASE_MS} ms)`);
    // One at a time first: the first migrates the database.
    const replicas = [await set.start()];
    replicas.push(...(await Promise.all([set.start(), set.start()])));
    const t = performance.now();
    const alone = await openRun(
      `${replicas[1].base}/run`,
      turn(`durable-alone-${randomUUID()}`, `/slow ${KILL_PROMPT.ms} ${words(KILL_PROMPT.words)}`),
    );
    await alone.done;
    const answerAloneMs = performance.now() - t;
    const kills: KillTrial[] = [];
    for (let i = 0; i < KILLS; i++) {
      progress(`durable: kill -9 ${i + 1}/${KILLS}`);
      kills.push(await killTrial(db, replicas));
      // The killed one's successor joins at the back: each trial kills another replica.
      replicas.push(await set.start());
      replicas.shift();
    }
    progress(`durable: rolling restart of 3 replicas with ${ROLLING_RUNS} live runs`);
    const rolling = await rollingRestart(db, replicas, set.start);
    const baseline = env.BENCH_DURABLE_BASELINE;
    const cost = baseline
      ? await benchContinuationCost(
          { current: MAIN, baseline: join(baseline, 'dist', 'src', 'main.js') },
          { current: url('cost_current'), baseline: url('cost_baseline'), stats: pg.url },
          progress,
        )
      : 'not measured: set BENCH_DURABLE_BASELINE to a built checkout of the commit before issue 25 (bench/README.md)';
    return { answerAloneMs, kills, rolling, cost };
  } finally {
    await set.stopAll();
    await db.end();
    await pg.stop();
  }
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (v: number) => `${Math.round(v).toLocaleString('en-US')} ms`;
const s = (v: number) => `${(v / 1000).toFixed(1)} s`;

export function formatDurable(r: DurableResult): string {
  const k = r.kills;
  const roll = r.rolling;
  const lines = [
    `Durable runs (issue 25): built replicas on one database, RUN_LEASE_MS ${LEASE_MS}, SHUTDOWN_GRACE_MS ${GRACE_MS}`,
    `kill -9 mid-answer (${k.length} times; '/slow ${KILL_PROMPT.ms}', ${KILL_PROMPT.words} words, ${ms(r.answerAloneMs)} uninterrupted; killed after the third word)`,
    `${'from the kill to'.padEnd(40)}${'p50'.padStart(10)}${'max'.padStart(10)}`,
    `${"the continued answer's first delta".padEnd(40)}${ms(
      quantile(
        k.map((t) => t.killToContinuedMs),
        0.5,
      ),
    ).padStart(10)}${ms(Math.max(...k.map((t) => t.killToContinuedMs))).padStart(10)}`,
    `${'its RUN_FINISHED'.padEnd(40)}${ms(
      quantile(
        k.map((t) => t.killToFinishedMs),
        0.5,
      ),
    ).padStart(10)}${ms(Math.max(...k.map((t) => t.killToFinishedMs))).padStart(10)}`,
    ...k.flatMap((t, i) => t.problems.map((p) => `  kill ${i + 1}: ${p}`)),
    `rolling restart of 3 replicas, ${ROLLING_RUNS} runs ('/slow ${ROLLING_PROMPT.ms}', ${ROLLING_PROMPT.words} words an attempt)`,
    `  restart took ${s(roll.restartMs)} (first SIGTERM to the last successor ready); the last run ended ${s(roll.allEndedMs)} after the first SIGTERM`,
    `  runs still live at each SIGTERM: ${roll.liveAtSigterm.join(', ')}; ${roll.moved} streams ended RUN_MOVED and rejoined`,
    `  finished ${roll.finished}/${ROLLING_RUNS}, INTERRUPTED ${roll.interrupted}, other ends ${roll.otherEnds.length ? [...new Set(roll.otherEnds)].map((e) => `${roll.otherEnds.filter((x) => x === e).length}× ${e}`).join(', ') : 'none'}, messages stored twice ${roll.storedTwice}`,
    ...roll.problems.map((p) => `  ${p}`),
  ];
  return [
    lines.join('\n'),
    typeof r.cost === 'string' ? `Continuation cost: ${r.cost}` : formatCost(r.cost),
  ].join('\n\n');
}

export function durableTargets(r: DurableResult): RatioRow[] {
  const bound = LEASE_MS + 2000;
  const finished = r.kills.map((t) => t.killToFinishedMs);
  const clean = r.kills.filter((t) => !t.problems.length).length;
  const roll = r.rolling;
  return [
    {
      name: `kill -9 mid-answer -> continued RUN_FINISHED, max of ${r.kills.length}`,
      figure: ms(Math.max(...finished)),
      target: `≤ lease + 2 s = ${ms(bound)}`,
      met: Math.max(...finished) <= bound,
      detail: `p50 ${ms(quantile(finished, 0.5))}; first continued delta p50 ${ms(
        quantile(
          r.kills.map((t) => t.killToContinuedMs),
          0.5,
        ),
      )}`,
    },
    {
      name: 'kill -9: answer stored once, one well-formed stream',
      figure: `${clean}/${r.kills.length}`,
      target: 'all',
      met: clean === r.kills.length,
      detail: 'stream rules, @ag-ui/client verifier, same log on a third replica, the thread',
    },
    {
      name: `rolling restart of 3, ${ROLLING_RUNS} live runs: finished`,
      figure: `${roll.finished}/${ROLLING_RUNS}`,
      target: `${ROLLING_RUNS}/${ROLLING_RUNS}, 0 INTERRUPTED`,
      met: roll.finished === ROLLING_RUNS && roll.interrupted === 0 && !roll.problems.length,
      detail: `${roll.interrupted} INTERRUPTED; restart took ${s(roll.restartMs)}`,
    },
    {
      name: 'rolling restart: messages stored twice',
      figure: String(roll.storedTwice),
      target: '0',
      met: roll.storedTwice === 0,
      detail: `${roll.moved} streams moved and rejoined`,
    },
    ...(typeof r.cost === 'string' ? [] : costTargets(r.cost)),
  ];
}
