import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each run's event log (issue 13: resumable runs): the SSE frames as the run's first reader got
 * them, in chunks of consecutive sequence numbers, so a client can rejoin the stream on any replica
 * and a finished run can be replayed whole for RUN_EVENTS_RETENTION_MS after it ended.
 */
export class RunEvents1764690700000 implements MigrationInterface {
  name = 'RunEvents1764690700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE run_events (
        run_id     text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        first_seq  integer NOT NULL,
        last_seq   integer NOT NULL,
        frames     text NOT NULL,
        terminal   boolean NOT NULL DEFAULT false,
        PRIMARY KEY (run_id, first_seq),
        CHECK (last_seq >= first_seq AND first_seq >= 1)
      )`,
    );
    await q.query(`CREATE INDEX runs_finished_at ON runs (finished_at) WHERE finished_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_finished_at`);
    await q.query(`DROP TABLE run_events`);
  }
}
