import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Runs that outlive their replica (issue 25): what a run needs to be continued elsewhere, written by
 * statements that exist anyway. `input` (the request, less the messages its thread stores, and its
 * owner) by the claim; `progress` (the messages of its completed steps) by the periodic checkpoint;
 * `attempt` counts the replicas that took it (a fence: only the latest may renew, checkpoint or end
 * it), `handovers` those that handed it over draining (a lost replica is an attempt not handed over,
 * RUN_MAX_ATTEMPTS). `input` and `progress` are cleared when the run ends.
 */
export class DurableRuns1764692700000 implements MigrationInterface {
  name = 'DurableRuns1764692700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE runs ADD COLUMN input jsonb, ADD COLUMN progress jsonb, ADD COLUMN attempt int NOT NULL DEFAULT 1,
       ADD COLUMN handovers int NOT NULL DEFAULT 0`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE runs DROP COLUMN input, DROP COLUMN progress, DROP COLUMN attempt, DROP COLUMN handovers`,
    );
  }
}
