import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runs waiting for their busy thread (issue 25, `forwardedProps.ifBusy`): one row per waiting
 * request, on any replica, taken in order (`interrupt` before `enqueue`, then first come). A row
 * whose replica stopped renewing it (`expires_at`) no longer holds its place.
 */
export class RunQueue1764692600000 implements MigrationInterface {
  name = 'RunQueue1764692600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE run_queue (
        ticket     bigserial PRIMARY KEY,
        thread_id  text NOT NULL,
        run_id     text NOT NULL,
        urgent     boolean NOT NULL,
        expires_at timestamptz NOT NULL
      )`,
    );
    await q.query(`CREATE INDEX run_queue_thread ON run_queue (thread_id, urgent DESC, ticket)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_queue`);
  }
}
