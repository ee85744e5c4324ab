import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A result may be posted before its run registers the call: it is kept as `early` (tool name unknown
 * until the run registers it), and the registration or the run's wait completes it.
 */
export class EarlyToolResults1764690500000 implements MigrationInterface {
  name = 'EarlyToolResults1764690500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_tool_calls DROP CONSTRAINT run_tool_calls_status_check`);
    await q.query(
      `ALTER TABLE run_tool_calls ADD CONSTRAINT run_tool_calls_status_check
         CHECK (status IN ('pending', 'submitted', 'done', 'early'))`,
    );
    await q.query(`ALTER TABLE run_tool_calls ALTER COLUMN tool_name DROP NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM run_tool_calls WHERE tool_name IS NULL`);
    await q.query(`ALTER TABLE run_tool_calls ALTER COLUMN tool_name SET NOT NULL`);
    await q.query(`UPDATE run_tool_calls SET status = 'done' WHERE status = 'early'`);
    await q.query(`ALTER TABLE run_tool_calls DROP CONSTRAINT run_tool_calls_status_check`);
    await q.query(
      `ALTER TABLE run_tool_calls ADD CONSTRAINT run_tool_calls_status_check
         CHECK (status IN ('pending', 'submitted', 'done'))`,
    );
  }
}
