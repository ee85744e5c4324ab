import { db, eventually, runRow } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { LiveRun, memoryOf, openRun, postRun, readRun, runInput, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** The run ids waiting in a thread's queue, first come first. */
const queued = (threadId: string) =>
  db((c) =>
    c
      .query<{ run_id: string }>('SELECT run_id FROM run_queue WHERE thread_id = $1 ORDER BY ticket', [
        threadId,
      ])
      .then((r) => r.rows.map((row) => row.run_id)),
  );

/** When each run started and ended, as recorded. */
const times = (runIds: string[]) =>
  db((c) =>
    c
      .query<{ id: string; started_at: Date; finished_at: Date | null; status: string }>(
        'SELECT id, started_at, finished_at, status FROM runs WHERE id = ANY($1)',
        [runIds],
      )
      .then((r) => new Map(r.rows.map((row) => [row.id, row]))),
  );

/**
 * Busy threads (docs/protocol.md#busy-threads): `forwardedProps.ifBusy` on POST /run, on two instances of the
 * built service on one database.
 */
describe('a run for a busy thread (forwardedProps.ifBusy)', () => {
  let a: BuiltService;
  let b: BuiltService;

  beforeAll(async () => {
    [a, b] = await Promise.all([
      startBuiltService({ LOG_LEVEL: 'error' }),
      startBuiltService({ LOG_LEVEL: 'error', RUN_QUEUE_WAIT_MS: '4000', MAX_ACTIVE_RUNS_PER_OWNER: '2' }),
    ]);
  }, 120_000);
  afterAll(() => Promise.all([a?.stop(), b?.stop()]));

  const turn = (threadId: string, text: string, forwardedProps: Record<string, unknown> = {}) =>
    runInput(text, { threadId, forwardedProps: { ...memoryOf(threadId), ...forwardedProps } });
  /** A request that waits: its answer (once the thread is free) read as it streams. */
  const waiting = (url: string, input: ReturnType<typeof turn>) => {
    const controller = new AbortController();
    const answer = postRun(url, input, { signal: controller.signal }).then((res) => readRun(res, 20_000));
    answer.catch(() => undefined);
    return { answer, leave: () => controller.abort() };
  };
  const cancel = (t: BuiltService, runId: string) =>
    fetch(`${t.base}/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST' });

  it('reject (the default, or named) is a 409 THREAD_BUSY at once; an unknown policy a 400', async () => {
    const threadId = uid('reject');
    const first = turn(threadId, '/slow 60000 a b c');
    const active = await openRun(`${a.base}/run`, first);
    await active.waitFor((e) => e.type === 'RUN_STARTED');
    for (const [t, props] of [
      [a, {}],
      [b, { ifBusy: 'reject' }],
    ] as const) {
      const res = await postRun(`${t.base}/run`, turn(threadId, 'now', props));
      expect({ status: res.status, body: await res.json() }).toMatchObject({
        status: 409,
        body: { statusCode: 409, code: 'THREAD_BUSY' },
      });
    }
    const bad = await postRun(`${b.base}/run`, turn(threadId, 'now', { ifBusy: 'later' }));
    expect({ status: bad.status, body: await bad.json() }).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_FAILED', details: [{ path: 'forwardedProps.ifBusy' }] },
    });
    expect(await queued(threadId)).toEqual([]);
    expect((await cancel(a, first.runId)).status).toBe(202);
    await active.done;
  }, 30_000);

  it('enqueue: requests on either instance wait and start in order, each once the run before it ended; one that leaves gives its place up', async () => {
    const threadId = uid('enqueue');
    // Answering until cancelled: the requests below queue up behind it whatever the machine's pace.
    const first = turn(threadId, '/slow 60000 a b c');
    const active = await openRun(`${a.base}/run`, first);
    await active.waitFor((e) => e.type === 'RUN_STARTED');
    const second = turn(threadId, '/slow 20 second in line', { ifBusy: 'enqueue' });
    const third = turn(threadId, 'third in line', { ifBusy: 'enqueue' });
    const leaving = turn(threadId, 'never mind', { ifBusy: 'enqueue' });
    const secondReq = waiting(`${b.base}/run`, second);
    await eventually(async () => ((await queued(threadId)).length === 1 ? true : undefined));
    const leavingReq = waiting(`${b.base}/run`, leaving);
    await eventually(async () => ((await queued(threadId)).length === 2 ? true : undefined));
    const thirdReq = waiting(`${a.base}/run`, third);
    await eventually(async () => ((await queued(threadId)).length === 3 ? true : undefined));
    expect(await queued(threadId)).toEqual([second.runId, leaving.runId, third.runId]);
    leavingReq.leave();
    await eventually(async () => ((await queued(threadId)).length === 2 ? true : undefined));
    expect((await cancel(b, first.runId)).status).toBe(202);

    const [firstFrames, secondRun, thirdRun] = await Promise.all([
      active.done,
      secondReq.answer,
      thirdReq.answer,
    ]);
    expect(firstFrames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    for (const [run, input] of [
      [secondRun, second],
      [thirdRun, third],
    ] as Array<[LiveRun, typeof second]>) {
      expect(run.res.status).toBe(200);
      const frames = await run.done;
      assertStreamRules(frames, input);
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    }
    const recorded = await times([first.runId, second.runId, third.runId, leaving.runId]);
    expect(recorded.has(leaving.runId)).toBe(false);
    const [r1, r2, r3] = [first, second, third].map((i) => recorded.get(i.runId)!);
    expect([r1.status, r2.status, r3.status]).toEqual(['cancelled', 'finished', 'finished']);
    expect(r2.started_at.getTime()).toBeGreaterThanOrEqual(r1.finished_at!.getTime());
    expect(r3.started_at.getTime()).toBeGreaterThanOrEqual(r2.finished_at!.getTime());
    expect(await queued(threadId)).toEqual([]);
  }, 60_000);

  it('a request for a free thread never goes before the requests waiting for it: reject is a 409, enqueue waits behind them', async () => {
    const threadId = uid('no-jumping');
    await (
      await openRun(`${a.base}/run`, turn(threadId, 'hello'))
    ).done;
    // A request waiting on some replica, whose turn has not come yet (the thread just became free).
    await db((c) =>
      c.query(
        `INSERT INTO run_queue (thread_id, run_id, urgent, expires_at)
         VALUES ($1, 'waiting-elsewhere', false, now() + interval '1 minute')`,
        [threadId],
      ),
    );
    const rejected = await postRun(`${b.base}/run`, turn(threadId, 'me first'));
    expect({ status: rejected.status, body: await rejected.json() }).toMatchObject({
      status: 409,
      body: { code: 'THREAD_BUSY' },
    });
    const patient = turn(threadId, 'after you', { ifBusy: 'enqueue' });
    const patientReq = waiting(`${a.base}/run`, patient);
    await eventually(async () => ((await queued(threadId)).length === 2 ? true : undefined));
    expect(await queued(threadId)).toEqual(['waiting-elsewhere', patient.runId]);
    expect(await runRow(patient.runId)).toBeUndefined();
    // The request before it leaves the queue: this one's turn.
    await db((c) => c.query(`DELETE FROM run_queue WHERE run_id = 'waiting-elsewhere'`));
    const run = await patientReq.answer;
    expect(run.res.status).toBe(200);
    expect((await run.done).at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(await queued(threadId)).toEqual([]);
  }, 30_000);

  it('interrupt: the active run on the other instance ends RUN_ERROR CANCELLED, and this one starts as soon as the thread is free', async () => {
    const threadId = uid('interrupt');
    const first = turn(threadId, '/slow 60000 a b c');
    const active = await openRun(`${a.base}/run`, first);
    await active.waitFor((e) => e.type === 'RUN_STARTED');
    const next = turn(threadId, 'change of plan', { ifBusy: 'interrupt' });
    const res = await postRun(`${b.base}/run`, next);
    expect(res.status).toBe(200);
    const frames = await (await readRun(res)).done;
    assertStreamRules(frames, next);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    const cut = await active.done;
    expect(cut.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    assertStreamRules(cut, first);
    expect(await runRow(first.runId)).toMatchObject({ status: 'cancelled', error_code: 'CANCELLED' });
    expect(await runRow(next.runId)).toMatchObject({ status: 'finished' });
    expect(await queued(threadId)).toEqual([]);
  }, 30_000);

  it('a wait counts against the owner’s run cap, and ends with 409 THREAD_BUSY after RUN_QUEUE_WAIT_MS', async () => {
    const threadId = uid('bounded');
    const first = turn(threadId, '/slow 60000 a b c');
    const active = await openRun(`${b.base}/run`, first);
    await active.waitFor((e) => e.type === 'RUN_STARTED');
    const started = Date.now();
    const patient = waiting(`${b.base}/run`, turn(threadId, 'in line', { ifBusy: 'enqueue' }));
    await eventually(async () => ((await queued(threadId)).length === 1 ? true : undefined));
    // MAX_ACTIVE_RUNS_PER_OWNER is 2 on this instance: the running one and the waiting one.
    const third = await postRun(`${b.base}/run`, runInput('another thread'));
    expect({ status: third.status, body: await third.json() }).toMatchObject({
      status: 429,
      body: { code: 'TOO_MANY_ACTIVE_RUNS' },
    });
    const refused = await patient.answer;
    expect(refused.res.status).toBe(409);
    expect(JSON.parse(refused.raw())).toMatchObject({
      code: 'THREAD_BUSY',
      message: expect.stringContaining('RUN_QUEUE_WAIT_MS'),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(4000);
    expect(await queued(threadId)).toEqual([]);
    expect((await cancel(b, first.runId)).status).toBe(202);
    await active.done;
  }, 30_000);
});
