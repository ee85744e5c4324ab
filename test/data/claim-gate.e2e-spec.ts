import { Client } from 'pg';
import { db, eventually, startApp, TestApp } from '../support/app';
import { postRun, runInput } from '../support/sse';

/** Claims waiting on the lock the test holds (a claim's statement begins with its budget). */
const waitingClaims = () =>
  db((c) =>
    c
      .query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH budget AS%'`,
      )
      .then((r) => r.rows[0].n),
  );

/**
 * A burst of runs is claimed the pool less the event log's two writes at a time (ConversationStore):
 * the event log's writes are never queued behind a pool's worth of claims.
 */
describe('claims in flight: the pool less the event log’s two writes at most', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startApp({ DATABASE_POOL_SIZE: '6', MAX_ACTIVE_RUNS_PER_OWNER: '100' });
  });
  afterAll(() => app.close());

  it('8 runs at once on a pool of 6: 4 claims reach the database at a time, and every run is claimed and streams', async () => {
    const lock = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await lock.connect();
    await lock.query('BEGIN');
    // Claims insert into runs: they wait on the lock, each holding its place in the gate.
    await lock.query('LOCK TABLE runs IN SHARE MODE');
    const inputs = Array.from({ length: 8 }, () => runInput('hello'));
    const posts = inputs.map((input) =>
      postRun(app.runUrl, input).then(async (res) => [res.status, await res.text()] as const),
    );
    await eventually(async () => ((await waitingClaims()) >= 4 ? true : undefined), 10_000);
    // Without the gate the pool's 6 connections would all carry a claim within these samples.
    for (let i = 0; i < 20; i++) {
      expect(await waitingClaims()).toBeLessThanOrEqual(4);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    await lock.query('COMMIT');
    await lock.end();
    const answers = await Promise.all(posts);
    expect(answers.map(([status]) => status)).toEqual(inputs.map(() => 200));
    for (const [, text] of answers) expect(text).toContain('"RUN_FINISHED"');
  }, 60_000);
});
