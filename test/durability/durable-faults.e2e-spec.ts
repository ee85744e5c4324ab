import { Client } from 'pg';
import { db, eventually, storedMessages } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { checkRawLog, rawLog, rejoin, turn, verified, words } from '../support/durable';
import { Frame, openRun, parseFrames, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/**
 * Faults in series (docs/durable-runs.md#one-writer-per-run). Built replicas on one database, killed or
 * paused at the worst moments; every stream a client sees stays well-formed and the thread keeps what it
 * streamed, once.
 */
const LEASE_MS = 3000;
const env = { LOG_LEVEL: 'log', RUN_LEASE_MS: String(LEASE_MS), RUN_MAX_ATTEMPTS: '5' };

/** The run's whole log from `base`: ids 1..n, RUN_STARTED first, one terminal event, last. */
async function wholeLog(base: string, runId: string): Promise<Frame[]> {
  const { frames } = parseFrames(await checkRawLog(base, runId));
  expect(frames[0].event.type).toBe('RUN_STARTED');
  expect(frames.at(-1)!.event.type).toMatch(/^RUN_(FINISHED|ERROR)$/);
  return frames;
}

/** The text of the last text message a stream shows, and its id. */
function lastAnswer(frames: Frame[]): { messageId: string; text: string } {
  const start = frames.findLast((f) => f.event.type === 'TEXT_MESSAGE_START')!.event;
  const text = frames
    .filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT' && f.event.messageId === start.messageId)
    .map((f) => f.event.delta as string)
    .join('');
  return { messageId: start.messageId as string, text };
}

/** The assistant messages stored in the thread: the answer once, under the id streamed last. */
async function expectStoredOnce(threadId: string, streamed: { messageId: string; text: string }) {
  const rows = (await db((c) => storedMessages(c, threadId))).filter((m) => m.role === 'assistant');
  expect(rows.map((m) => ({ id: m.id, content: m.content }))).toEqual([
    { id: streamed.messageId, content: streamed.text },
  ]);
}

/** Which replica wrote that it continued the run (its log at LOG_LEVEL log). */
const continuer = (replicas: BuiltService[], runId: string, attempt: number) =>
  eventually(
    () =>
      Promise.resolve(
        replicas.find((r) => r.output().includes(`run ${runId}: continued here (attempt ${attempt})`)),
      ),
    LEASE_MS * 4,
  );

/** Rejoins the run from `after` on `base` until its terminal event or until the stream breaks. */
async function readOn(base: string, runId: string, after: number): Promise<Frame[]> {
  const joined = await rejoin(base, runId, after, 60_000);
  expect(joined.res.status).toBe(200);
  return joined.done.catch(() => joined.frames);
}

const runRow = (runId: string) =>
  db((c) => c.query('SELECT status, attempt FROM runs WHERE id = $1', [runId])).then((r) => r.rows[0]);

describe('durable runs under faults in series (built replicas, one database)', () => {
  const all: BuiltService[] = [];
  const start = async () => {
    const s = await startBuiltService(env);
    all.push(s);
    return s;
  };
  afterEach(() => all.splice(0).forEach((s) => s.kill()));

  it('a kill between the claim (which stores RUN_STARTED) and the first content stored: the continuation goes on after RUN_STARTED', async () => {
    const a = await start();
    const threadId = uid('unstarted');
    // The first token comes after 2 s: the test locks the log between the claim and the first content.
    const input = turn(threadId, '/bench 12 2000 20');
    const live = await openRun(`${a.base}/run`, input);
    // The claim stored the log's first event with the run, in the same statement.
    const { rows: begun } = await db((c) =>
      c.query<{ first_seq: number; last_seq: number; frames: string }>(
        'SELECT first_seq, last_seq, frames FROM run_events WHERE run_id = $1',
        [input.runId],
      ),
    );
    expect(begun).toEqual([{ first_seq: 1, last_seq: 1, frames: expect.stringContaining('"RUN_STARTED"') }]);
    // Nothing more can be stored while the test holds the log locked.
    const lock = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE run_events IN EXCLUSIVE MODE');
    // The replica's write of the first content waits on the lock: it dies with it, and so does its statement.
    await eventually(async () => {
      const { rows } = await db((c) =>
        c.query(
          `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%run_events%'`,
        ),
      );
      return rows.length ? rows : undefined;
    }, 10_000);
    a.kill();
    await db((c) =>
      c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%run_events%'`,
      ),
    );
    await lock.query('COMMIT');
    await lock.end();
    // The client saw RUN_STARTED and nothing after it: no content could be stored.
    const seen: Frame[] = await live.done.catch(() => live.frames);
    expect(seen.map((f) => [f.id, f.event.type])).toEqual([[1, 'RUN_STARTED']]);

    const b = await start();
    await continuer([b], input.runId, 2);
    const frames = await readOn(b.base, input.runId, 0);
    assertStreamRules(frames, input);
    expect(frames[0]).toEqual(seen[0]);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(await verified(frames)).toBe(frames.length);
    expect(await wholeLog(b.base, input.runId)).toEqual(frames);
    await expectStoredOnce(threadId, lastAnswer(frames));
  }, 120_000);

  it('a kill of the replica continuing another’s run, and a client that rejoins across both losses', async () => {
    const [a, b, c] = await Promise.all([start(), start(), start()]);
    const threadId = uid('twice');
    const input = turn(threadId, `/slow 100 ${words(60)}`);
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta.includes('w3'), 15_000);
    a.kill();
    const seen: Frame[] = await live.done.catch(() => live.frames);

    // The first loss: the client rejoins the replica that continues the run, and reads from it.
    const second = await continuer([b, c], input.runId, 2);
    const third = second === b ? c : b;
    const joined = await rejoin(second.base, input.runId, seen.at(-1)!.id, 60_000);
    expect(joined.res.status).toBe(200);
    await joined.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', LEASE_MS * 4);
    // A follower on the third replica reads the same run throughout.
    const follower = await rejoin(third.base, input.runId, 0, 60_000);

    // The second loss: the continuing replica dies too; the third continues.
    second.kill();
    seen.push(...(await joined.done.catch(() => joined.frames)).filter((f) => f.id > seen.at(-1)!.id));
    await continuer([third], input.runId, 3);
    seen.push(...(await readOn(third.base, input.runId, seen.at(-1)!.id)));

    for (const frames of [seen, await follower.done]) {
      assertStreamRules(frames, input);
      expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => i + 1));
      expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
      expect(await verified(frames)).toBe(frames.length);
    }
    expect(await wholeLog(third.base, input.runId)).toEqual(seen);
    const answer = lastAnswer(seen);
    expect(answer.text).toBe(`You said: ${words(60)}`);
    await expectStoredOnce(threadId, answer);
    expect(await runRow(input.runId)).toEqual({ status: 'finished', attempt: 3 });
  }, 180_000);

  it('a paused replica (SIGSTOP past its lease, then SIGCONT) writes nothing to the run it lost; its client gets the run as the other replica finishes it', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const threadId = uid('paused');
    const input = turn(threadId, `/slow 100 ${words(50)}`);
    const live = await openRun(`${a.base}/run`, input);
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta.includes('w3'), 15_000);
    a.pause();
    try {
      await continuer([b], input.runId, 2);
      // The other replica has written its part before the paused one wakes.
      await eventually(async () => {
        const log = parseFrames(await rawLog(b.base, input.runId)).frames;
        return log.some((f) => f.event.type === 'TEXT_MESSAGE_CONTENT' && f.id > 10) ? true : undefined;
      }, LEASE_MS * 4);
    } finally {
      a.resume();
    }
    // The paused replica's client stays connected: it follows the run in the log, as the other writes it.
    const frames = await live.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(await verified(frames)).toBe(frames.length);
    const log = await wholeLog(b.base, input.runId);
    expect(log).toEqual(frames);
    // The cut message is closed once, and nothing of it follows its end: the paused replica wrote nothing more.
    const cut = log.find((f) => f.event.type === 'TEXT_MESSAGE_START')!.event.messageId;
    const ended = log.findIndex((f) => f.event.type === 'TEXT_MESSAGE_END' && f.event.messageId === cut);
    expect(log.slice(ended + 1).filter((f) => f.event.messageId === cut)).toEqual([]);
    const answer = lastAnswer(log);
    expect(answer.messageId).not.toBe(cut);
    expect(answer.text).toBe(`You said: ${words(50)}`);
    await expectStoredOnce(threadId, answer);
    expect(await runRow(input.runId)).toEqual({ status: 'finished', attempt: 2 });
    await eventually(() =>
      Promise.resolve(a.output().includes(`run ${input.runId}: another replica took it over`) || undefined),
    );
  }, 120_000);
});
