import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Marks the assistant rows io-bridge stored before it marked them as it writes them: each carries
 * Mastra's response boundary (`metadata.mastra.responseBoundary`), so a run that goes on from a row
 * (a tool result in a later run, a resumed approval) never has its answer folded into that row by a
 * processor that saves the turn itself (docs/protocol.md#where-threads-live). A row that is not
 * io-bridge's, or not JSON, is left as it is.
 */
export class ResponseBoundaries1764693200000 implements MigrationInterface {
  name = 'ResponseBoundaries1764693200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION pg_temp.io_bridge_bounded(content text) RETURNS text LANGUAGE plpgsql AS $fn$
      DECLARE c jsonb;
      BEGIN
        c := content::jsonb;
        IF jsonb_typeof(c->'metadata'->'agui') IS DISTINCT FROM 'array' THEN RETURN content; END IF;
        RETURN jsonb_set(c, '{metadata,mastra}',
                 CASE WHEN jsonb_typeof(c->'metadata'->'mastra') = 'object' THEN c->'metadata'->'mastra' ELSE '{}' END
                 || '{"responseBoundary": true}')::text;
      EXCEPTION WHEN others THEN
        RETURN content;
      END
      $fn$`);
    await q.query(`
      UPDATE mastra_messages SET content = pg_temp.io_bridge_bounded(content)
       WHERE role = 'assistant' AND strpos(content, '"agui":') > 0 AND strpos(content, '"responseBoundary"') = 0`);
    await q.query(`DROP FUNCTION pg_temp.io_bridge_bounded(text)`);
  }

  async down(): Promise<void> {
    // The marks stay: Mastra's own, they change nothing for the build before this one.
  }
}
