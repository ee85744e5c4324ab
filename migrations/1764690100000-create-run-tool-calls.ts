import { MigrationInterface, QueryRunner } from 'typeorm';

/** Frontend tool calls a run waits on, and the results posted for them (any replica may receive one). */
export class CreateRunToolCalls1764690100000 implements MigrationInterface {
  name = 'CreateRunToolCalls1764690100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE run_tool_calls (
        run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        tool_call_id  text NOT NULL,
        tool_name     text NOT NULL,
        status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'submitted', 'done')),
        result        jsonb,
        error         text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        submitted_at  timestamptz,
        PRIMARY KEY (run_id, tool_call_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_tool_calls`);
  }
}
