import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token budgets per owner (issue 23): each ended run's token count beside its usage, indexed by owner
 * and end so a claim sums an owner's window in an index-only range; and the budgets operators set
 * for one owner (`PUT /admin/quotas/:resourceId`), over the configured default.
 */
export class OwnerBudgets1764692300100 implements MigrationInterface {
  name = 'OwnerBudgets1764692300100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN tokens bigint NOT NULL DEFAULT 0`);
    await q.query(
      `CREATE INDEX runs_owner_tokens_idx ON runs (resource_id, finished_at) INCLUDE (tokens) WHERE tokens > 0`,
    );
    await q.query(
      `CREATE TABLE owner_quotas (
        resource_id  text PRIMARY KEY,
        tokens       bigint NOT NULL CHECK (tokens >= 0),
        window_ms    bigint NOT NULL CHECK (window_ms > 0),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        updated_by   text NOT NULL
      )`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE owner_quotas`);
    await q.query(`DROP INDEX runs_owner_tokens_idx`);
    await q.query(`ALTER TABLE runs DROP COLUMN tokens`);
  }
}
