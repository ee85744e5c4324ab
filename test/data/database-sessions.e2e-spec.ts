import { DataSource } from 'typeorm';
import { LeaseConnection } from '../../src/database/lease-connection';
import { db, startApp, TestApp } from '../support/app';
import { runInput, runToFrames } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

type Explained = Array<{ 'QUERY PLAN': Array<Record<string, unknown>> }>;

/** A statement that reads a run's tables, as the claim and the end do. */
const PLANNED = `EXPLAIN (ANALYZE, FORMAT JSON)
  SELECT count(*) FROM mastra_messages m JOIN mastra_threads t ON t.id = m.thread_id`;

/**
 * The service's database sessions never JIT-compile a statement (docs/operations.md#the-database-sessions),
 * even on a database that compiles every statement it plans (`jit_above_cost` 0 for the spec's
 * database): compiling a run's claim or end took 60–130 ms once its plan looked large.
 */
describe('database sessions without JIT', () => {
  let t: TestApp;
  beforeAll(async () => {
    await db(async (c) => {
      const name = (await c.query<{ name: string }>('SELECT current_database() AS name')).rows[0].name;
      await c.query(`ALTER DATABASE "${name}" SET jit = on`);
      await c.query(`ALTER DATABASE "${name}" SET jit_above_cost = 0`);
    });
    t = await startApp();
  });
  afterAll(() => t.close());

  it('compiles nothing in the pool or on the lease connection, where a session of its own would compile', async () => {
    // The database as any other client's session finds it: every plan compiled.
    const control = await db((c) => c.query(PLANNED));
    expect(control.rows[0]['QUERY PLAN'][0]).toHaveProperty('JIT');

    const pooled = await t.app.get(DataSource).query<Explained>(PLANNED);
    expect(pooled[0]['QUERY PLAN'][0]).not.toHaveProperty('JIT');
    const leases = await t.app.get(LeaseConnection).query<{ jit: string }>('SHOW jit', []);
    expect(leases[0].jit).toBe('off');
  });

  it("keeps the environment's PGOPTIONS, which pg reads only when given no options of its own", async () => {
    const before = process.env.PGOPTIONS;
    process.env.PGOPTIONS = '-c io_bridge_test.marker=kept';
    const other = await startApp();
    try {
      const [marker] = await other.app
        .get(DataSource)
        .query<Array<{ marker: string }>>(`SELECT current_setting('io_bridge_test.marker') AS marker`);
      expect(marker.marker).toBe('kept');
      const [jit] = await other.app.get(DataSource).query<Array<{ jit: string }>>('SHOW jit');
      expect(jit.jit).toBe('off');
      const leases = await other.app
        .get(LeaseConnection)
        .query<{ marker: string }>(`SELECT current_setting('io_bridge_test.marker') AS marker`, []);
      expect(leases[0].marker).toBe('kept');
    } finally {
      await other.close();
      if (before === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = before;
    }
  });

  it('streams a run whole on such a database', async () => {
    const input = runInput('hello');
    const { res, frames } = await runToFrames(t.runUrl, input);
    expect(res.status).toBe(200);
    assertStreamRules(frames, input);
    expect(frames.map((f) => f.event.type)).toContain('TEXT_MESSAGE_CONTENT');
  });
});
