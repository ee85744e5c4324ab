import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Mastra's response boundary (`metadata.mastra.responseBoundary`) on the rows a run can go on from,
 * so a processor that saves the turn itself never folds the answer into one of them
 * (docs/protocol.md#where-threads-live):
 * - `io_bridge_bounded(content)` is a row's content with the mark (its other metadata kept);
 * - the assistant rows io-bridge stored before it marked them as it writes them get it (a row that
 *   is not io-bridge's, or not JSON, is left as it is);
 * - a row `io_bridge_answered` writes a tool result into gets it, a row Mastra wrote included: that
 *   function becomes the one before it (`io_bridge_answered_parts`), then the mark.
 */
export class ResponseBoundaries1764693200000 implements MigrationInterface {
  name = 'ResponseBoundaries1764693200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION io_bridge_bounded(c jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $fn$
        SELECT jsonb_set(c, '{metadata}',
                 CASE WHEN jsonb_typeof(c->'metadata') = 'object' THEN c->'metadata' ELSE '{}' END || jsonb_build_object('mastra',
                 CASE WHEN jsonb_typeof(c->'metadata'->'mastra') = 'object' THEN c->'metadata'->'mastra' ELSE '{}' END
                 || '{"responseBoundary": true}'))
      $fn$`);
    // Only io-bridge's rows, and none that is not JSON (a row must not fail the migration).
    await q.query(`
      CREATE FUNCTION pg_temp.io_bridge_bounded_if_placed(content text) RETURNS text LANGUAGE plpgsql AS $fn$
      DECLARE c jsonb;
      BEGIN
        c := content::jsonb;
        IF jsonb_typeof(c->'metadata'->'agui') IS DISTINCT FROM 'array' THEN RETURN content; END IF;
        RETURN io_bridge_bounded(c)::text;
      EXCEPTION WHEN others THEN
        RETURN content;
      END
      $fn$`);
    await q.query(`
      UPDATE mastra_messages SET content = pg_temp.io_bridge_bounded_if_placed(content)
       WHERE role = 'assistant' AND strpos(content, '"agui":') > 0 AND strpos(content, '"responseBoundary"') = 0`);
    await q.query(`DROP FUNCTION pg_temp.io_bridge_bounded_if_placed(text)`);
    await q.query(`ALTER FUNCTION io_bridge_answered(text, jsonb) RENAME TO io_bridge_answered_parts`);
    await q.query(`
      CREATE FUNCTION io_bridge_answered(content text, answers jsonb) RETURNS text
      LANGUAGE sql IMMUTABLE AS $fn$
        SELECT io_bridge_bounded(io_bridge_answered_parts(content, answers)::jsonb)::text
      $fn$`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The marks stay: Mastra's own, they change nothing for the build before this one.
    await q.query(`DROP FUNCTION io_bridge_answered(text, jsonb)`);
    await q.query(`ALTER FUNCTION io_bridge_answered_parts(text, jsonb) RENAME TO io_bridge_answered`);
    await q.query(`DROP FUNCTION io_bridge_bounded(jsonb)`);
  }
}
