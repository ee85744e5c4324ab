import { MigrationInterface, QueryRunner } from 'typeorm';

/** What a run has shown so far, written while it streams: kept in its thread when its instance dies. */
export class AddRunCheckpoint1764690400000 implements MigrationInterface {
  name = 'AddRunCheckpoint1764690400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN checkpoint jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN checkpoint`);
  }
}
