import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals as AG-UI 1.0 interrupts (issue 24): a run stopped at a tool call that needs a person's
 * approval leaves an interrupt here; a later run's `RunAgentInput.resume` answers it, on any replica,
 * as long as it has not expired. The answer stays as the audit (`Run.approvals`: who, when, which).
 */
export class RunInterrupts1764691000000 implements MigrationInterface {
  name = 'RunInterrupts1764691000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE run_interrupts (
        id            text PRIMARY KEY,
        run_id        text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        thread_id     text NOT NULL,
        resource_id   text NOT NULL,
        tool_call_id  text NOT NULL,
        tool_name     text NOT NULL,
        args          jsonb NOT NULL,
        message_id    text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        expires_at    timestamptz NOT NULL,
        approved      boolean,
        answered_by   text,
        answered_at   timestamptz,
        answered_in   text,
        UNIQUE (run_id, tool_call_id)
      )`,
    );
    await q.query(`CREATE INDEX run_interrupts_run ON run_interrupts (run_id)`);
    await q.query(
      `CREATE INDEX run_interrupts_answered_in ON run_interrupts (answered_in) WHERE answered_in IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_interrupts`);
  }
}
