import { MigrationInterface, QueryRunner } from 'typeorm';
import { StoredMessage } from '../src/threads/message-format';
import { placeMessages } from '../src/threads/mastra-rows';

/** Threads whose messages move in one batch (their messages are read at once). */
const BATCH_THREADS = 200;

/**
 * One store of threads: Mastra's memory (`mastra_threads`, `mastra_messages`), which io-bridge and
 * Mastra both read and io-bridge writes (docs/protocol.md#where-threads-live). io-bridge's `threads` and
 * `messages` move into it and are kept, renamed `threads_before_mastra` and
 * `messages_before_mastra`, for an operator to check and drop.
 * - A thread keeps its id, owner, title ('' for none, as Mastra has it), metadata and times; its
 *   agent and the moment of its last message stored (each row of a thread gets a moment of its own,
 *   in order) are two columns io-bridge adds to Mastra's table.
 * - Its messages become rows (mastra-rows.ts), in their order. A thread both stores held (an agent
 *   with a Mastra `Memory` saved its own copies) keeps io-bridge's, whose ids its clients know; a
 *   thread Mastra held first (`messages_in_mastra`) keeps Mastra's, which were the ones it listed.
 * - A thread id that both hold for different owners stays Mastra's; io-bridge's thread of that id
 *   is only in `threads_before_mastra`.
 * - `io_bridge_answered(content, answers)` sets the results of calls in a row's content: a tool
 *   result that comes after its call was stored (in the next run, or when an approval is resumed);
 *   `io_bridge_parts(content)` reads a row's parts, none when it is not JSON.
 */
export class OneThreadStore1764693100000 implements MigrationInterface {
  name = 'OneThreadStore1764693100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE mastra_threads ADD COLUMN IF NOT EXISTS io_bridge_agent_id text`);
    await q.query(
      `ALTER TABLE mastra_threads ADD COLUMN IF NOT EXISTS io_bridge_last_message_at timestamptz`,
    );
    await q.query(
      `UPDATE mastra_threads SET "updatedAtZ" = COALESCE("updatedAtZ", "updatedAt" AT TIME ZONE 'UTC'),
              "createdAtZ" = COALESCE("createdAtZ", "createdAt" AT TIME ZONE 'UTC')
        WHERE "updatedAtZ" IS NULL OR "createdAtZ" IS NULL`,
    );
    // An owner's threads, newest first (keyset on the time and the id), and those of one agent.
    await q.query(
      `CREATE INDEX IF NOT EXISTS mastra_threads_io_bridge_owner_idx ON mastra_threads ("resourceId", "updatedAtZ" DESC, id DESC)`,
    );
    await q.query(
      `CREATE INDEX IF NOT EXISTS mastra_threads_io_bridge_agent_idx
         ON mastra_threads ("resourceId", io_bridge_agent_id, "updatedAtZ" DESC, id DESC)`,
    );
    // A row's parts, or none when its content is not Mastra's JSON (a row must not fail a statement).
    await q.query(`
      CREATE OR REPLACE FUNCTION io_bridge_parts(content text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $fn$
      BEGIN
        RETURN COALESCE(CASE WHEN jsonb_typeof(content::jsonb->'parts') = 'array' THEN content::jsonb->'parts' END, '[]'::jsonb);
      EXCEPTION WHEN others THEN
        RETURN '[]'::jsonb;
      END
      $fn$`);
    await q.query(`
      CREATE OR REPLACE FUNCTION io_bridge_answered(content text, answers jsonb) RETURNS text
      LANGUAGE sql IMMUTABLE AS $fn$
        SELECT (c || jsonb_build_object('parts', COALESCE((
                 SELECT jsonb_agg(CASE WHEN a.answer IS NULL THEN p.part ELSE jsonb_set(p.part, '{toolInvocation}',
                          (p.part->'toolInvocation') || jsonb_build_object('state', 'result', 'result', a.answer->'result'))
                        END ORDER BY p.ord)
                   FROM jsonb_array_elements(c->'parts') WITH ORDINALITY AS p(part, ord)
                   LEFT JOIN LATERAL (
                     SELECT x AS answer FROM jsonb_array_elements(answers) AS x
                      WHERE p.part->>'type' = 'tool-invocation'
                        AND p.part->'toolInvocation'->>'toolCallId' = x->>'toolCallId'
                        AND p.part->'toolInvocation'->>'state' IS DISTINCT FROM 'result'
                      LIMIT 1) AS a ON true), c->'parts'))
               -- A row io-bridge placed lists the results among its AG-UI messages too (once each).
               || CASE WHEN jsonb_typeof(c->'metadata'->'agui') = 'array' THEN jsonb_build_object('metadata',
                    (c->'metadata') || jsonb_build_object('agui', (c->'metadata'->'agui') || COALESCE((
                      SELECT jsonb_agg(x->'message') FROM jsonb_array_elements(answers) AS x
                       WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(c->'metadata'->'agui') AS m
                                          WHERE m->>'id' = x->'message'->>'id')), '[]'::jsonb)))
                  ELSE '{}'::jsonb END)::text
          FROM (SELECT content::jsonb AS c) AS row_content
      $fn$`);
    await q.query(`
      INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt", "createdAtZ",
                                  "updatedAtZ", io_bridge_agent_id)
      SELECT t.id, t.resource_id, COALESCE(t.title, ''), t.metadata, t.created_at AT TIME ZONE 'UTC',
             t.updated_at AT TIME ZONE 'UTC', t.created_at, t.updated_at, t.agent_id
        FROM threads t
      ON CONFLICT (id) DO UPDATE SET
        io_bridge_agent_id = EXCLUDED.io_bridge_agent_id,
        title = CASE WHEN mastra_threads.title = '' THEN EXCLUDED.title ELSE mastra_threads.title END,
        metadata = CASE WHEN jsonb_typeof(mastra_threads.metadata) = 'object' THEN mastra_threads.metadata ELSE '{}' END
                   || EXCLUDED.metadata,
        "updatedAtZ" = GREATEST(mastra_threads."updatedAtZ", EXCLUDED."updatedAtZ"),
        "updatedAt" = GREATEST(mastra_threads."updatedAt", EXCLUDED."updatedAt")
      WHERE mastra_threads."resourceId" = EXCLUDED."resourceId"`);
    await this.moveMessages(q);
    await q.query(`
      UPDATE mastra_threads t SET io_bridge_last_message_at = m.last
        FROM (SELECT thread_id, max("createdAt") AT TIME ZONE 'UTC' AS last FROM mastra_messages GROUP BY thread_id) m
       WHERE t.id = m.thread_id`);
    await q.query(`ALTER TABLE messages RENAME TO messages_before_mastra`);
    await q.query(`ALTER TABLE threads RENAME TO threads_before_mastra`);
  }

  /**
   * The messages of each thread that moved and was io-bridge's first, in batches of threads: what
   * Mastra saved of it goes, and its rows are placed, each a millisecond after the one before.
   */
  private async moveMessages(q: QueryRunner): Promise<void> {
    let after = '';
    for (;;) {
      const threads: Array<{ id: string; resource_id: string }> = await q.query(
        `SELECT t.id, t.resource_id FROM threads t JOIN mastra_threads mt ON mt.id = t.id AND mt."resourceId" = t.resource_id
          WHERE NOT t.messages_in_mastra AND t.id > $1 ORDER BY t.id LIMIT $2`,
        [after, BATCH_THREADS],
      );
      if (!threads.length) return;
      after = threads[threads.length - 1].id;
      const ids = threads.map((t) => t.id);
      const messages: Array<{ thread_id: string; body: StoredMessage; created_at: Date }> = await q.query(
        `SELECT thread_id, body, created_at FROM messages WHERE thread_id = ANY($1::text[]) ORDER BY thread_id, position`,
        [ids],
      );
      // Mastra's copies go only where io-bridge's messages replace them.
      await q.query(`DELETE FROM mastra_messages WHERE thread_id = ANY($1::text[])`, [
        [...new Set(messages.map((m) => m.thread_id))],
      ]);
      const rows: Array<{
        id: string;
        thread: string;
        owner: string;
        role: string;
        content: string;
        at: Date;
      }> = [];
      for (const thread of threads) {
        const own = messages.filter((m) => m.thread_id === thread.id);
        if (!own.length) continue;
        const placed = placeMessages(
          thread.id,
          own.map((m) => m.body),
        );
        // Each row at its first message's time, or a millisecond after the row before it.
        const firstOf = new Map(own.map((m) => [m.body.id, m.created_at]));
        let last = 0;
        for (const row of [...placed.rows, ...placed.answers.flatMap((a) => (a.orphan ? [a.orphan] : []))]) {
          const message = (JSON.parse(row.content) as { metadata: { agui: StoredMessage[] } }).metadata
            .agui[0];
          last = Math.max(last + 1, new Date(firstOf.get(message.id) ?? Date.now()).getTime());
          rows.push({ ...row, thread: thread.id, owner: thread.resource_id, at: new Date(last) });
        }
      }
      if (!rows.length) continue;
      await q.query(
        `INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
         SELECT r.id, r.thread, r.content, r.role, 'v2', r.at AT TIME ZONE 'UTC', r.at, r.owner
           FROM jsonb_to_recordset($1::jsonb) AS r(id text, thread text, owner text, role text, content text, at timestamptz)
         ON CONFLICT (id) DO NOTHING`,
        [JSON.stringify(rows)],
      );
    }
  }

  async down(q: QueryRunner): Promise<void> {
    // Mastra's tables keep their rows (those written since are not in the tables brought back).
    await q.query(`ALTER TABLE threads_before_mastra RENAME TO threads`);
    await q.query(`ALTER TABLE messages_before_mastra RENAME TO messages`);
    await q.query(`DROP FUNCTION io_bridge_answered(text, jsonb)`);
    await q.query(`DROP FUNCTION io_bridge_parts(text)`);
    await q.query(`DROP INDEX mastra_threads_io_bridge_agent_idx`);
    await q.query(`DROP INDEX mastra_threads_io_bridge_owner_idx`);
    await q.query(`ALTER TABLE mastra_threads DROP COLUMN io_bridge_last_message_at`);
    await q.query(`ALTER TABLE mastra_threads DROP COLUMN io_bridge_agent_id`);
  }
}
