import { db, eventually, startApp, TestApp } from '../support/app';
import { memoryOf, runInput } from '../support/sse';

/**
 * Lease renewals and checkpoints each lock the rows of every run an instance holds, in no set order.
 * Two in flight at once deadlock (seen under load: "lease renewal failed: deadlock detected", and a
 * renewal that loses may stop runs), so an instance sends one at a time.
 */
describe('lease renewals and checkpoints take turns', () => {
  let t: TestApp;
  // Renewals and checkpoints every second; a run stops when its lease is unconfirmed for 1.5 s.
  beforeAll(async () => (t = await startApp({ RUN_LEASE_MS: '3000' })));
  afterAll(() => t?.close());

  /** The instance's statements waiting on a lock: its renewals and checkpoints, and the others. */
  const waiting = () =>
    db(async (c) => {
      const { rows } = await c.query<{ writes: number; others: number }>(
        `SELECT count(*) FILTER (WHERE lease_write)::int AS writes, count(*) FILTER (WHERE NOT lease_write)::int AS others
           FROM (SELECT query LIKE '%renewed AS%' OR query LIKE '%saved AS%' AS lease_write FROM pg_stat_activity
                  WHERE application_name LIKE 'io-bridge%' AND wait_event_type = 'Lock') AS w`,
      );
      return rows[0];
    });

  it('never sends a second while one waits on a locked run: one waits, then the run stops, never two', async () => {
    const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    const input = runInput(`/slow 100 ${words}`);
    // Stored in its thread: what it shows is checkpointed.
    Object.assign(input, { forwardedProps: memoryOf(input.threadId) });
    const response = await fetch(t.runUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input),
    });
    const text = response.text();
    await eventually(
      () =>
        db(async (c) => {
          const { rows } = await c.query(`SELECT 1 FROM runs WHERE id = $1 AND checkpoint IS NOT NULL`, [
            input.runId,
          ]);
          return rows.length ? true : undefined;
        }),
      10_000,
    );
    // Another session holds the run row as an update does (its event log, whose key check shares it, goes on):
    // every renewal and checkpoint of the instance waits.
    await db(async (lock) => {
      await lock.query('BEGIN');
      await lock.query('SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE', [input.runId]);
      let most = 0;
      let stopped = false;
      void text.then(() => (stopped = true));
      try {
        // Until the run stops for its unconfirmed lease (its stream ends, or its end statement waits
        // too): by then renewals and checkpoints came due, every second.
        while (!stopped) {
          const { writes, others } = await waiting();
          most = Math.max(most, writes);
          stopped ||= others > 0;
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        await lock.query('ROLLBACK');
      }
      expect(most).toBe(1);
    });
    expect(await text).toContain('"type":"RUN_ERROR"');
  }, 30_000);
});
