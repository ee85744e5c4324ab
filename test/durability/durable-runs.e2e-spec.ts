import { db, eventually, runRowWhen, storedMessages } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { checkRawLog, followRun, PICK, postResult, rejoin, turn, verified, words } from '../support/durable';
import { openRun, parseFrames, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** Runs outlive their replica (docs/durable-runs.md). Three built services on one database, each killable. */
const LEASE_MS = 3000;
const env = (extra: Record<string, string> = {}) => ({
  LOG_LEVEL: 'log',
  RUN_LEASE_MS: String(LEASE_MS),
  SHUTDOWN_GRACE_MS: '3000',
  ...extra,
});

/** The thread's stored messages (role and text), in order. */
const stored = (threadId: string) =>
  db((c) => storedMessages(c, threadId)).then((messages) =>
    messages.map((m) => ({ id: m.id, role: m.role, body: m, content: m.content })),
  );

/** A run on `a` that calls the frontend tool `pick`, once its replica parked it. */
async function parkedOn(a: BuiltService, prefix: string) {
  const threadId = uid(prefix);
  const input = { ...turn(threadId, '/tool pick {}'), tools: [PICK] };
  const live = await openRun(`${a.base}/run`, input);
  const call = await live.waitFor((e) => e.type === 'TOOL_CALL_END', 15_000);
  await runRowWhen(input.runId, (row) => row.parked === call.toolCallId);
  return { threadId, input, live, call };
}

describe('runs that outlive their replica (3 instances, one database)', () => {
  const all: BuiltService[] = [];
  const start = async (extra?: Record<string, string>) => {
    const s = await startBuiltService(env(extra));
    all.push(s);
    return s;
  };
  afterEach(() => all.splice(0).forEach((s) => s.kill()));

  it('kill -9 mid-answer: another replica continues it within the lease + 2 s; the thread holds the answer once; a rejoin sees one well-formed stream', async () => {
    const [a, b, c] = await Promise.all([start(), start(), start()]);
    const threadId = uid('killed');
    const input = turn(threadId, `/slow 100 ${words(30)}`);
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta.includes('w3'), 15_000);
    a.kill();
    const killedAt = Date.now();
    await live.done.catch(() => undefined);
    const seen = [...live.frames];
    const last = seen.at(-1)!.id;

    const rest = await rejoin(b.base, input.runId, last);
    expect(rest.res.status).toBe(200);
    const cut = seen.find((f) => f.event.type === 'TEXT_MESSAGE_START')!.event.messageId;
    const answer = await rest.waitFor(
      (e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.messageId !== cut,
      LEASE_MS + 10_000,
    );
    const continuedAfterMs = Date.now() - killedAt;
    const tail = await rest.done;
    // Figures for the report.
    console.log(`kill -9 → continued answer: ${continuedAfterMs} ms (lease ${LEASE_MS} ms)`);
    expect(answer).toBeDefined();
    expect(continuedAfterMs).toBeLessThan(LEASE_MS + 2000);
    expect(tail[0].id).toBe(last + 1);
    const whole = [...seen, ...tail];
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(tail.map((f) => f.event)).toContainEqual(
      expect.objectContaining({ type: 'TEXT_MESSAGE_END', messageId: cut }),
    );
    expect(await verified(whole)).toBe(whole.length);
    const raw = await checkRawLog(c.base, input.runId);
    expect(parseFrames(raw).frames.map((f) => f.event)).toEqual(whole.map((f) => f.event));

    const full = `You said: ${words(30)}`;
    const messages = await stored(threadId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1].content).toBe(full);
    const row = await db((q) => q.query('SELECT status, attempt FROM runs WHERE id = $1', [input.runId]));
    expect(row.rows[0]).toEqual({ status: 'finished', attempt: 2 });
    // The thread takes the next run.
    const next = await openRun(`${c.base}/run`, turn(threadId, 'and now?'));
    expect((await next.done).at(-1)!.event.type).toBe('RUN_FINISHED');
  }, 120_000);

  it('kill -9 after a completed step: the continuation keeps that step (its frontend tool is not called again) and runs only the cut one', async () => {
    const a = await start();
    const [b] = await Promise.all([start(), start()]);
    const threadId = uid('stepped');
    const input = {
      ...turn(threadId, '/tool pick {}'),
      tools: [PICK],
    };
    const live = await openRun(`${a.base}/run`, input);
    const call = await live.waitFor((e) => e.type === 'TOOL_CALL_END', 15_000);
    // The answer to the tool is long: the model's second step repeats it word by word.
    expect(await postResult(a.base, input.runId, call.toolCallId, words(6000))).toBeLessThan(300);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
    // The first step is checkpointed (at most a second after it completed) before the replica dies.
    await runRowWhen(input.runId, (row) => Boolean(row.progress));
    a.kill();
    await live.done.catch(() => undefined);
    const seen = [...live.frames];
    expect(seen.at(-1)!.event.type).not.toMatch(/^RUN_(FINISHED|ERROR)$/);
    const tail = await (await rejoin(b.base, input.runId, seen.at(-1)!.id, 60_000)).done;
    const whole = [...seen, ...tail];
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(whole.filter((f) => f.event.type === 'TOOL_CALL_START')).toHaveLength(1);
    const messages = await stored(threadId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(String(messages[3].content)).toMatch(/^Tool pick returned "w1 w2 .* w6000"$/);
  }, 120_000);

  it('a run waiting for a frontend tool longer than RUN_PARK_AFTER_MS is parked (held by no replica); a result posted to another replica wakes it at once', async () => {
    const opts = { RUN_PARK_AFTER_MS: '500' };
    const a = await start(opts);
    const [b, c] = await Promise.all([start(opts), start(opts)]);
    const { threadId, input, live, call } = await parkedOn(a, 'parked');
    // Nothing of it runs on a any more: no active run, no lease renewed there.
    const activeOnA = async () =>
      /^io_bridge_active_runs (\d+)$/m.exec(await (await fetch(`${a.origin}/metrics`)).text())?.[1];
    expect(await activeOnA()).toBe('0');
    expect(await postResult(b.base, input.runId, call.toolCallId, 'blue')).toBeLessThan(300);
    // The client's stream on a goes on: a relays the run from its log.
    const frames = await live.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(frames.map((f) => f.event)).toContainEqual(
      expect.objectContaining({ type: 'TOOL_CALL_RESULT', toolCallId: call.toolCallId, content: 'blue' }),
    );
    // Woken where the result arrived, unless a live replica's reaper, due at that moment, took it first:
    // either way one replica continued it, once.
    const continued = [a, b, c].filter((s) => s.output().includes(`run ${input.runId}: continued here`));
    expect(continued).toHaveLength(1);
    const messages = await stored(threadId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[3].content).toBe('Tool pick returned "blue"');
  }, 120_000);

  it('a parked run that gets no result ends TOOL_RESULT_TIMEOUT; its replica keeps nothing of it: a rejoin after its last event is a 204', async () => {
    const a = await start({ RUN_PARK_AFTER_MS: '300', FRONTEND_TOOL_TIMEOUT_MS: '2000' });
    const { input, live } = await parkedOn(a, 'timed-out');
    // Its client's stream follows the log, to the end the reaper wrote.
    const frames = await live.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'TOOL_RESULT_TIMEOUT' });
    const row = await db((q) => q.query('SELECT status, error_code FROM runs WHERE id = $1', [input.runId]));
    expect(row.rows[0]).toEqual({ status: 'error', error_code: 'TOOL_RESULT_TIMEOUT' });
    // Held in memory, the log of the parked run would be followed here, unended, instead of a 204.
    const after = await fetch(`${a.base}/runs/${encodeURIComponent(input.runId)}/events`, {
      headers: { accept: 'text/event-stream', 'last-event-id': String(frames.at(-1)!.id) },
    });
    await after.body?.cancel();
    expect(after.status).toBe(204);
  }, 60_000);

  it('a rolling restart of 3 replicas with 30 live runs: 30 of 30 finish, none INTERRUPTED, no message stored twice', async () => {
    // A drain hands its runs over at once: no lease has to lapse here, so a longer one keeps renewals
    // (which stop a run when late by half a lease) clear of a loaded machine's latency.
    const opts = { RUN_LEASE_MS: '10000' };
    const first = await start(opts);
    const replicas = [first, ...(await Promise.all([start(opts), start(opts)]))];
    const alive = new Set(replicas);
    const anyAlive = () => [...alive][Math.floor(Math.random() * alive.size)];
    const anyBase = () => anyAlive().base;
    const inputs = Array.from({ length: 30 }, () => turn(uid('rolling'), `/slow 250 ${words(16)}`));
    const started = inputs.map((input, i) => ({
      input,
      stream: followRun(input, replicas[i % 3].base, anyBase),
    }));
    // Every run streams before the restart begins.
    await eventually(async () => {
      const { rows } = await db((q) =>
        q.query(`SELECT count(*)::int AS n FROM run_events WHERE run_id = ANY($1) AND first_seq = 1`, [
          inputs.map((i) => i.runId),
        ]),
      );
      return rows[0].n === 30 ? true : undefined;
    }, 20_000);
    for (let i = 0; i < 3; i++) {
      alive.delete(replicas[i]);
      await replicas[i].stop();
      replicas[i] = await start(opts);
      alive.add(replicas[i]);
    }
    const followed = await Promise.all(started.map((s) => s.stream));
    const moved = followed.reduce((n, f) => n + f.moved, 0);
    followed.forEach(({ frames }, i) => {
      assertStreamRules(frames, inputs[i]);
      expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_FINISHED' });
    });
    console.log(`rolling restart: ${moved} stream(s) ended RUN_MOVED and rejoined`);
    expect(moved).toBeGreaterThan(0);
    const { rows } = await db((q) =>
      q.query(
        `SELECT r.status, r.error_code, count(m.*)::int AS messages,
                count(DISTINCT m.content::jsonb->'metadata'->'agui'->0->>'content')::int AS texts
           FROM runs r LEFT JOIN mastra_messages m ON m.thread_id = r.thread_id
          WHERE r.id = ANY($1) GROUP BY r.id, r.status, r.error_code`,
        [inputs.map((i) => i.runId)],
      ),
    );
    expect(rows).toHaveLength(30);
    for (const row of rows)
      expect(row).toEqual({ status: 'finished', error_code: null, messages: 2, texts: 2 });
  }, 240_000);

  it('a run that kills its replica every time ends INTERRUPTED after RUN_MAX_ATTEMPTS', async () => {
    const opts = { RUN_MAX_ATTEMPTS: '2' };
    const a = await start(opts);
    const others = await Promise.all([start(opts), start(opts)]);
    const threadId = uid('doomed');
    const input = turn(threadId, `/slow 200 ${words(40)}`);
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
    a.kill();
    // Whoever continues it is killed too: its second replica lost, it has no attempt left.
    const taker = await eventually(
      () => Promise.resolve(others.find((s) => s.output().includes(`run ${input.runId}: continued here`))),
      LEASE_MS + 10_000,
    );
    await eventually(async () => {
      const { rows } = await db((q) =>
        q.query('SELECT max(last_seq) AS n FROM run_events WHERE run_id = $1', [input.runId]),
      );
      return Number(rows[0].n) > live.frames.at(-1)!.id + 3 ? true : undefined;
    }, 10_000);
    taker.kill();
    const survivor = others.find((s) => s !== taker)!;
    const whole = await (await rejoin(survivor.base, input.runId, 0, 40_000)).done;
    assertStreamRules(whole, input);
    expect(whole.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'INTERRUPTED' });
    expect(survivor.output()).not.toContain(`run ${input.runId}: continued here`);
    const row = await db((q) =>
      q.query('SELECT status, error_code, attempt FROM runs WHERE id = $1', [input.runId]),
    );
    // Two replicas lost it; the reaper's end takes it over too (attempt 3), so neither can write to it again.
    expect(row.rows[0]).toEqual({ status: 'error', error_code: 'INTERRUPTED', attempt: 3 });
  }, 120_000);
});
