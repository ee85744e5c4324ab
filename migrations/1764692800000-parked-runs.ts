import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Parked runs (issue 25): a run that waited for a frontend tool result longer than
 * RUN_PARK_AFTER_MS holds nothing on any replica; `parked` names the tool call it waits for, and its
 * lease runs until the tool's timeout. A posted result lapses the lease, and a replica continues it.
 */
export class ParkedRuns1764692800000 implements MigrationInterface {
  name = 'ParkedRuns1764692800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN parked text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP COLUMN parked`);
  }
}
