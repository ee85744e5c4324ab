import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One writer per run (issue 33): every write to a run's event log holds a key-share lock on the
 * run's row at the writer's attempt. A unique index on (id, attempt) makes `attempt` a key column,
 * so a claim that takes the run over (attempt + 1) waits for the writes in flight and every later
 * write of the earlier attempt finds no row; renewals, checkpoints and ends (no key change) never
 * wait for them (docs/durable-runs.md, "One writer per run").
 */
export class RunWriteFence1764692900000 implements MigrationInterface {
  name = 'RunWriteFence1764692900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE UNIQUE INDEX runs_id_attempt_key ON runs (id, attempt)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_id_attempt_key`);
  }
}
