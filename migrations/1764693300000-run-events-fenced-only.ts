import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run_events` keeps no foreign key to `runs`: every write of a run's events is fenced by the
 * run's row, which it locks in the same statement (docs/durable-runs.md, "One writer per run"),
 * and no run is ever deleted, so the key checked again, row by row, what the fence had just
 * checked. Its check was about half of an event's insert.
 */
export class RunEventsFencedOnly1764693300000 implements MigrationInterface {
  name = 'RunEventsFencedOnly1764693300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_events DROP CONSTRAINT IF EXISTS run_events_run_id_fkey`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE run_events ADD CONSTRAINT run_events_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE`,
    );
  }
}
