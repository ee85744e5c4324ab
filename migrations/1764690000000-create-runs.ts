import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateRuns1764690000000 implements MigrationInterface {
  name = 'CreateRuns1764690000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE runs (
        id            text PRIMARY KEY,
        thread_id     text NOT NULL,
        resource_id   text NOT NULL,
        agent_id      text NOT NULL,
        status        text NOT NULL
          CHECK (status IN ('running', 'waiting_for_tool', 'finished', 'error', 'cancelled')),
        started_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now(),
        finished_at   timestamptz,
        error_code    text,
        error_message text
      )`);
    await q.query(
      `CREATE INDEX runs_resource_thread_started_idx ON runs (resource_id, thread_id, started_at DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE runs`);
  }
}
