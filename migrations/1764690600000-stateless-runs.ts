import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run that names no memory is stateless (CONTRACT section 2): recorded, but not part of any
 * thread, so it neither makes a stored thread busy nor waits for one.
 */
export class StatelessRuns1764690600000 implements MigrationInterface {
  name = 'StatelessRuns1764690600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN stateless boolean NOT NULL DEFAULT false`);
    await q.query(`DROP INDEX runs_one_active_per_thread`);
    await q.query(
      `CREATE UNIQUE INDEX runs_one_active_per_thread ON runs (thread_id)
        WHERE NOT stateless AND status IN ('running', 'waiting_for_tool')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    // Stateless runs cannot be told apart once the column is gone: end the active ones first.
    await q.query(
      `UPDATE runs SET status = 'error', error_code = 'INTERRUPTED',
              error_message = 'Ended by a downgrade', finished_at = now(), updated_at = now()
        WHERE stateless AND status IN ('running', 'waiting_for_tool')`,
    );
    await q.query(`DROP INDEX runs_one_active_per_thread`);
    await q.query(
      `CREATE UNIQUE INDEX runs_one_active_per_thread ON runs (thread_id) WHERE status IN ('running', 'waiting_for_tool')`,
    );
    await q.query(`ALTER TABLE runs DROP COLUMN stateless`);
  }
}
