import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A run's token usage (issue 23): AG-UI 1.0 `TokenUsage[]`, one entry per provider and model,
 * written by the end-of-run statement itself (no statement of its own). NULL: the model reported none.
 */
export class RunUsage1764692300000 implements MigrationInterface {
  name = 'RunUsage1764692300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN usage jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN usage`);
  }
}
