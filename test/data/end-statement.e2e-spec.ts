import { Client } from 'pg';
import { frame } from '../../src/runs/events/frames';
import { ConversationStore } from '../../src/runs/storage/conversation.store';
import { parseAnnouncement, RUN_EVENTS_CHANNEL } from '../../src/runs/storage/run-events.repository';
import { db, insertLiveRun, startApp, TestApp } from '../support/app';
import { uid } from '../support/sse';

/**
 * A run's end stores the events its log had not stored yet in the statement that records the end
 * (docs/durable-runs.md, "One writer per run"): on the real database, the tail is stored and
 * announced with the end, and a claim the run no longer holds stores neither.
 */
describe("a run's end stores its log's tail", () => {
  const owner = 'end-tail-owner';
  let t: TestApp;
  let store: ConversationStore;
  beforeAll(async () => {
    t = await startApp();
    store = t.app.get(ConversationStore);
  });
  afterAll(() => t.close());

  /** A live run, its row at `attempt` (a later claim took it when above 1). */
  const liveRun = (attempt = 1) => insertLiveRun(owner, attempt);
  const tailOf = (first: number, last: number) => {
    let frames = '';
    for (let seq = first; seq <= last; seq++)
      frames += frame(seq, { type: 'TEXT_MESSAGE_CONTENT', timestamp: 1, messageId: 'm', delta: `${seq}` });
    return { first, last, frames, terminal: false };
  };
  const state = (runId: string) =>
    db(async (c) => ({
      status: (await c.query('SELECT status FROM runs WHERE id = $1', [runId])).rows[0].status as string,
      events: (
        await c.query(
          'SELECT first_seq, last_seq, frames, terminal FROM run_events WHERE run_id = $1 ORDER BY first_seq',
          [runId],
        )
      ).rows,
    }));
  /** The end with `chunk` as its tail: whether it ended the run, and what it settled the tail as. */
  const end = async (runId: string, attempt: number, chunk: ReturnType<typeof tailOf>, announce: boolean) => {
    const settled: string[] = [];
    const ended = await store.endRun({
      runId,
      attempt,
      threadId: uid('thread'),
      resourceId: owner,
      end: { status: 'finished' },
      produced: [],
      tail: { chunk, announce, settle: (result) => settled.push(result) },
    });
    return { ended, settled };
  };

  it('stores the tail with the end, in one commit, and announces it to those who follow the run', async () => {
    const runId = await liveRun();
    const listener = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await listener.connect();
    try {
      const announced = new Promise<string>((resolve) =>
        listener.on('notification', (n) => {
          if (n.payload && parseAnnouncement(n.payload).runId === runId) resolve(n.payload);
        }),
      );
      await listener.query(`LISTEN ${RUN_EVENTS_CHANNEL}`);
      const chunk = tailOf(2, 4);
      expect(await end(runId, 1, chunk, true)).toEqual({ ended: true, settled: ['stored'] });
      expect(await state(runId)).toEqual({
        status: 'finished',
        events: [{ first_seq: 2, last_seq: 4, frames: chunk.frames, terminal: false }],
      });
      expect(parseAnnouncement(await announced)).toEqual({ runId, chunk });
    } finally {
      await listener.end();
    }
  });

  it('stores nothing for a claim the run no longer holds: the later claim writes its log', async () => {
    const runId = await liveRun(2);
    expect(await end(runId, 1, tailOf(2, 4), false)).toEqual({ ended: false, settled: ['superseded'] });
    expect(await state(runId)).toEqual({ status: 'running', events: [] });
  });

  it('never replaces stored frames with others: a tail starting where a stored chunk starts only extends it', async () => {
    const runId = await liveRun();
    const stored = tailOf(2, 3);
    await db((c) =>
      c.query(
        `INSERT INTO run_events (run_id, first_seq, last_seq, frames, terminal) VALUES ($1, 2, 3, $2, false)`,
        [runId, stored.frames],
      ),
    );
    const other = { ...tailOf(2, 5), frames: stored.frames.replace('"2"', '"x"') + tailOf(4, 5).frames };
    expect(await end(runId, 1, other, false)).toEqual({ ended: true, settled: ['stored'] });
    expect((await state(runId)).events).toEqual([
      { first_seq: 2, last_seq: 3, frames: stored.frames, terminal: false },
    ]);
  });

  it('settles the tail as failed when the statement fails, and fails with it', async () => {
    const runId = await liveRun();
    // Postgres's text holds no NUL: the statement is refused, and nothing of it is stored.
    const broken = { ...tailOf(2, 2), frames: 'id: 2\ndata: \u0000\n\n' };
    const settled: string[] = [];
    await expect(
      store.endRun({
        runId,
        attempt: 1,
        threadId: uid('thread'),
        resourceId: owner,
        end: { status: 'finished' },
        produced: [],
        tail: { chunk: broken, announce: false, settle: (result) => settled.push(result) },
      }),
    ).rejects.toThrow();
    expect(settled).toEqual(['failed']);
    expect(await state(runId)).toEqual({ status: 'running', events: [] });
  });
});
