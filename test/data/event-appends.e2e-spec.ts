import { frame } from '../../src/runs/events/frames';
import { RunEventsRepository } from '../../src/runs/storage/run-events.repository';
import type { StoredChunk } from '../../src/runs/storage/run-events.repository';
import { db, insertLiveRun, startApp, TestApp } from '../support/app';
import { uid } from '../support/sse';

/**
 * How an append stores a run's events (docs/durable-runs.md, "One writer per run"), on the real
 * database: a live log's first try is a plain insert, a retry only extends what is stored, and
 * the fence alone keeps events of no run out of the table.
 */
describe('event-log appends', () => {
  const owner = 'event-appends-owner';
  let t: TestApp;
  let events: RunEventsRepository;
  beforeAll(async () => {
    t = await startApp();
    events = t.app.get(RunEventsRepository);
  });
  afterAll(() => t.close());

  const liveRun = () => insertLiveRun(owner);
  const chunk = (runId: string, first: number, last: number, firstTry: boolean, text = 'w'): StoredChunk => {
    let frames = '';
    for (let seq = first; seq <= last; seq++)
      frames += frame(seq, {
        type: 'TEXT_MESSAGE_CONTENT',
        timestamp: 1,
        messageId: 'm',
        delta: `${text}${seq}`,
      });
    return { runId, attempt: 1, first, last, frames, terminal: false, firstTry };
  };
  const stored = (runId: string) =>
    db(
      async (c) =>
        (
          await c.query(
            'SELECT first_seq, last_seq, frames FROM run_events WHERE run_id = $1 ORDER BY first_seq',
            [runId],
          )
        ).rows,
    );

  it('stores first tries of several runs in one statement', async () => {
    const [a, b] = [await liveRun(), await liveRun()];
    const written = [chunk(a, 2, 3, true), chunk(b, 2, 2, true)];
    expect(await events.append(written, [])).toEqual([]);
    expect(await stored(a)).toEqual([{ first_seq: 2, last_seq: 3, frames: written[0].frames }]);
    expect(await stored(b)).toEqual([{ first_seq: 2, last_seq: 2, frames: written[1].frames }]);
  });

  it('fails a first try that meets a stored row, storing nothing of its statement', async () => {
    const [a, b] = [await liveRun(), await liveRun()];
    const first = chunk(a, 2, 2, true);
    await events.append([first], []);
    await expect(events.append([chunk(a, 2, 3, true), chunk(b, 2, 2, true)], [])).rejects.toThrow(
      /duplicate key/,
    );
    expect(await stored(a)).toEqual([{ first_seq: 2, last_seq: 2, frames: first.frames }]);
    expect(await stored(b)).toEqual([]);
  });

  it('lets a retry extend what its failed write stored, and never replace it with other frames', async () => {
    const runId = await liveRun();
    await events.append([chunk(runId, 2, 3, true)], []);
    // Other frames from the same start are left out; the same frames and more extend the row.
    await events.append([chunk(runId, 2, 4, false, 'other')], []);
    expect(await stored(runId)).toEqual([
      { first_seq: 2, last_seq: 3, frames: chunk(runId, 2, 3, true).frames },
    ]);
    await events.append([chunk(runId, 2, 5, false)], []);
    expect(await stored(runId)).toEqual([
      { first_seq: 2, last_seq: 5, frames: chunk(runId, 2, 5, false).frames },
    ]);
  });

  it('refuses the events of a run that has no row, and stores none of them', async () => {
    const runId = uid('run');
    expect(await events.append([chunk(runId, 2, 2, true), chunk(runId, 3, 3, false)], [])).toEqual([
      { runId, reason: 'superseded' },
      { runId, reason: 'superseded' },
    ]);
    expect(await stored(runId)).toEqual([]);
  });
});
