import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Mastra's memory tables, as `@mastra/pg` 1.27 makes them (`CREATE TABLE IF NOT EXISTS`: a database
 * where a Mastra project's storage made them already keeps them as they are), so io-bridge reads the
 * threads Mastra wrote even before any Mastra storage started (docs/protocol.md#threads-mastra-wrote).
 * `threads.messages_in_mastra`: the thread was Mastra's before io-bridge stored it, so its messages
 * are those Mastra's memory keeps.
 */
export class MastraMemoryTables1764693000000 implements MigrationInterface {
  name = 'MastraMemoryTables1764693000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE IF NOT EXISTS mastra_threads (
        "id" TEXT PRIMARY KEY NOT NULL,
        "resourceId" TEXT NOT NULL,
        "title" TEXT NOT NULL,
        "metadata" JSONB,
        "createdAt" TIMESTAMP NOT NULL,
        "updatedAt" TIMESTAMP NOT NULL,
        "createdAtZ" TIMESTAMPTZ DEFAULT NOW(),
        "updatedAtZ" TIMESTAMPTZ DEFAULT NOW()
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS mastra_messages (
        "id" TEXT PRIMARY KEY NOT NULL,
        "thread_id" TEXT NOT NULL,
        "content" TEXT NOT NULL,
        "role" TEXT NOT NULL,
        "type" TEXT NOT NULL,
        "createdAt" TIMESTAMP NOT NULL,
        "resourceId" TEXT,
        "createdAtZ" TIMESTAMPTZ DEFAULT NOW()
      )`);
    // Tables an older @mastra/pg made lack the time-zoned columns; it adds them alike.
    for (const [table, column] of [
      ['mastra_threads', 'createdAtZ'],
      ['mastra_threads', 'updatedAtZ'],
      ['mastra_messages', 'createdAtZ'],
    ]) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS "${column}" TIMESTAMPTZ DEFAULT NOW()`);
    }
    // Mastra's own indexes, by its names: an owner's threads, a thread's messages in order.
    await q.query(
      `CREATE INDEX IF NOT EXISTS mastra_threads_resourceid_createdat_idx ON mastra_threads ("resourceId", "createdAt" DESC)`,
    );
    await q.query(
      `CREATE INDEX IF NOT EXISTS mastra_messages_thread_id_createdat_idx ON mastra_messages (thread_id, "createdAt" DESC)`,
    );
    await q.query(`ALTER TABLE threads ADD COLUMN messages_in_mastra boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    // Mastra's tables stay: they may hold a Mastra project's memory.
    await q.query(`ALTER TABLE threads DROP COLUMN messages_in_mastra`);
  }
}
