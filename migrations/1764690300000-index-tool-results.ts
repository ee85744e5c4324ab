import { MigrationInterface, QueryRunner } from 'typeorm';

/** `format=ui` looks up tool results stored on a later page by their toolCallId. */
export class IndexToolResults1764690300000 implements MigrationInterface {
  name = 'IndexToolResults1764690300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX messages_tool_result_idx ON messages (thread_id, (body->>'toolCallId')) WHERE role = 'tool'`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX messages_tool_result_idx`);
  }
}
