import { MigrationInterface, QueryRunner } from 'typeorm';

/** Threads and their messages, owned by a resource; one active run per thread; run leases. */
export class CreateThreadsAndMessages1764690200000 implements MigrationInterface {
  name = 'CreateThreadsAndMessages1764690200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE threads (
        id           text PRIMARY KEY,
        resource_id  text NOT NULL,
        agent_id     text,
        title        text,
        metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now()
      )`);
    // Listing: an owner's threads, newest first, keyset on (updated_at, id); optionally by agent.
    await q.query(
      `CREATE INDEX threads_owner_updated_idx ON threads (resource_id, updated_at DESC, id DESC)`,
    );
    await q.query(
      `CREATE INDEX threads_owner_agent_updated_idx ON threads (resource_id, agent_id, updated_at DESC, id DESC)`,
    );
    await q.query(`
      CREATE TABLE messages (
        thread_id     text NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
        id            text NOT NULL,
        position      bigint NOT NULL,
        role          text NOT NULL,
        body          jsonb NOT NULL,
        run_id        text,
        created_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (thread_id, id),
        UNIQUE (thread_id, position)
      )`);
    await q.query(`ALTER TABLE runs ADD COLUMN lease_expires_at timestamptz`);
    // Runs left "running" by versions without leases can never be renewed or reaped: end them, so
    // the one-active-run index below can be built and their threads take runs again.
    await q.query(
      `UPDATE runs SET status = 'error', error_code = 'INTERRUPTED',
              error_message = 'Ended by an upgrade', finished_at = now(), updated_at = now()
        WHERE status IN ('running', 'waiting_for_tool')`,
    );
    // The database, not the application, keeps a thread to one active run, across replicas.
    await q.query(
      `CREATE UNIQUE INDEX runs_one_active_per_thread ON runs (thread_id) WHERE status IN ('running', 'waiting_for_tool')`,
    );
    await q.query(
      `CREATE INDEX runs_active_lease_idx ON runs (lease_expires_at) WHERE status IN ('running', 'waiting_for_tool')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_active_lease_idx`);
    await q.query(`DROP INDEX runs_one_active_per_thread`);
    await q.query(`ALTER TABLE runs DROP COLUMN lease_expires_at`);
    await q.query(`DROP TABLE messages`);
    await q.query(`DROP TABLE threads`);
  }
}
