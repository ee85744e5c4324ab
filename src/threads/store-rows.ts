/**
 * The common table expressions that store placed messages (mastra-rows.ts `Placed`, as JSON) into
 * their threads' rows, for the statements of a run that write messages (its claim, its end, the
 * reap of a lapsed run), so all three store them alike in one round trip.
 *
 * `src` names a relation of `(thread_id text, resource_id text, placed jsonb, last timestamptz,
 * write boolean)`: the threads to write, each owned and locked by the statement, `last` the moment
 * its thread's clock (`mastra_threads.io_bridge_last_message_at`) was moved to, `placed->'slots'`
 * moments after where it was: the batch's rows take those moments in order, one millisecond apart
 * (Mastra orders a thread by the millisecond, then by id). Only where `write` is anything written.
 * Every relation defined is named with `p` first:
 * - `existing (id)`: the batch's rows (and orphans) stored before: a message is never stored twice;
 * - `holders (thread_id, call, row_id, done)`: for each tool result whose call is not in a new row
 *   of the batch, the stored row that made the call, and whether it holds a result already;
 * - `inserted (id, thread_id, at)`, `answered (id)`: rows added, rows given results.
 */
export function storePlacedRows(src: string, p: string): string {
  return `
    ${p}rows AS (
      SELECT s.thread_id, s.resource_id, s.last, s.write, (s.placed->>'slots')::int AS slots, r.row, r.ord
        FROM ${src} s, jsonb_array_elements(s.placed->'rows') WITH ORDINALITY AS r(row, ord)),
    ${p}answers AS (
      SELECT s.thread_id, s.resource_id, s.last, s.write, (s.placed->>'slots')::int AS slots,
             jsonb_array_length(s.placed->'rows') AS placed_rows, a.answer, a.ord
        FROM ${src} s, jsonb_array_elements(s.placed->'answers') WITH ORDINALITY AS a(answer, ord)),
    ${p}existing AS (
      SELECT m.id FROM mastra_messages m
       WHERE m.id = ANY (ARRAY(SELECT r.row->>'id' FROM ${p}rows r
                               UNION ALL SELECT a.answer->'orphan'->>'id' FROM ${p}answers a WHERE a.answer ? 'orphan'))
         AND m.thread_id IN (SELECT thread_id FROM ${src})),
    ${p}holders AS (
      SELECT a.thread_id, a.write, a.answer->>'toolCallId' AS call, h.row_id,
             EXISTS (SELECT 1 FROM jsonb_array_elements(io_bridge_parts(h.content)) AS part
                      WHERE part->'toolInvocation'->>'toolCallId' = a.answer->>'toolCallId'
                        AND part->'toolInvocation'->>'state' = 'result') AS done
        FROM ${p}answers a CROSS JOIN LATERAL (
               -- The call's row in the batch, stored before; else the thread's latest row that made it,
               -- io-bridge's before a copy a processor saved (dropAnswerCopies deletes those).
               SELECT m.id AS row_id, m.content FROM mastra_messages m
                WHERE m.id = a.answer->>'row' AND m.thread_id = a.thread_id
               UNION ALL
               (SELECT m.id, m.content FROM mastra_messages m
                 WHERE a.answer->>'row' IS NULL AND m.thread_id = a.thread_id AND m.role = 'assistant'
                   AND strpos(m.content, a.answer->>'needle') > 0
                   AND EXISTS (SELECT 1 FROM jsonb_array_elements(io_bridge_parts(m.content)) AS part
                                WHERE part->'toolInvocation'->>'toolCallId' = a.answer->>'toolCallId')
                 ORDER BY ${placedByIoBridge('m')} DESC, m."createdAt" DESC LIMIT 1)
               LIMIT 1) AS h),
    ${p}orphans AS (
      SELECT a.*, row_number() OVER (PARTITION BY a.thread_id ORDER BY a.ord) AS n FROM ${p}answers a
       WHERE a.answer ? 'orphan'
         AND NOT EXISTS (SELECT 1 FROM ${p}holders h WHERE h.thread_id = a.thread_id AND h.call = a.answer->>'toolCallId')),
    ${p}inserted AS (
      INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
      SELECT x.id, x.thread_id, x.content, x.role, 'v2', x.at AT TIME ZONE 'UTC', x.at, x.resource_id
        FROM (SELECT r.thread_id, r.resource_id, r.row->>'id' AS id, r.row->>'role' AS role, r.row->>'content' AS content,
                     r.last - (r.slots - r.ord) * interval '1 millisecond' AS at
                FROM ${p}rows r WHERE r.write
              UNION ALL
              SELECT o.thread_id, o.resource_id, o.answer->'orphan'->>'id', 'assistant', o.answer->'orphan'->>'content',
                     o.last - (o.slots - o.placed_rows - o.n) * interval '1 millisecond'
                FROM ${p}orphans o WHERE o.write) AS x
      ON CONFLICT (id) DO NOTHING
      RETURNING id, thread_id, "createdAtZ" AS at),
    ${p}answered AS (
      UPDATE mastra_messages m SET content = io_bridge_answered(m.content, (
               SELECT jsonb_agg(a.answer ORDER BY a.ord) FROM ${p}holders h
                 JOIN ${p}answers a ON a.thread_id = h.thread_id AND a.answer->>'toolCallId' = h.call
                WHERE h.row_id = m.id))
       WHERE m.id = ANY (ARRAY(SELECT h.row_id FROM ${p}holders h WHERE NOT h.done AND h.write))
      RETURNING m.id)`;
}

/**
 * The moment a thread's clock moves to for a batch of `slots` rows (`$slots` a SQL expression): a
 * millisecond after the last row it stored (or now, if later), then one more for each further row.
 * `last` is the clock's current value (a column of the row being updated).
 */
export function clockAfter(last: string, slots: string): string {
  return `GREATEST(now(), ${last} + interval '1 millisecond') + (GREATEST(${slots}, 1) - 1) * interval '1 millisecond'`;
}

/**
 * Whether row `m` (a `mastra_messages` alias) is one io-bridge wrote: its JSON has an `agui` key
 * (`metadata.agui`, mastra-rows.ts). In JSON text `"agui":` can only be a key, since a string's
 * quotes are escaped, so what a message says cannot fool it, and a row that is not JSON is not one.
 */
export function placedByIoBridge(m: string): string {
  return `strpos(${m}.content, '"agui":') > 0`;
}

/**
 * Deletes the copies of a run's answer that a processor of its agent saved itself: Mastra's
 * observational memory saves each turn it sees, its own way, under ids of its own
 * (docs/protocol.md#where-threads-live). io-bridge's rows stand for those messages, so a thread
 * holds each once and its memory recalls each once.
 *
 * `src` names a relation of `(thread_id text, since timestamptz, until timestamptz)`: the thread
 * of a run and the span it ran (`until` null: it is ending now). A copy is an assistant row of that
 * thread stored in that span that io-bridge did not write (placedByIoBridge).
 */
export function dropAnswerCopies(src: string, p: string): string {
  return `
    ${p}copies AS (
      DELETE FROM mastra_messages m USING ${src} s
       WHERE m.thread_id = s.thread_id AND m."createdAt" >= (s.since AT TIME ZONE 'UTC')
         AND (s.until IS NULL OR m."createdAt" <= (s.until AT TIME ZONE 'UTC'))
         AND m.role = 'assistant' AND NOT ${placedByIoBridge('m')}
      RETURNING m.id)`;
}

/**
 * For dropAnswerCopies: the span of each run in `ended` (`id`, `started_at`, `stateless`) that
 * stores into its thread in `locked` (`id`), and the span the thread's run before it ran, both
 * owned by `owner` (a SQL expression). The run before is there because a run stopped mid-answer (a
 * cancel) ends before the memory saves what it had, as the aborted stream winds down.
 */
export function runSpans(ended: string, locked: string, owner: string): string {
  return `
    SELECT l.id AS thread_id, e.started_at AS since, NULL::timestamptz AS until FROM ${ended} e, ${locked} l
     WHERE NOT e.stateless
    UNION ALL
    SELECT l.id, b.started_at, b.finished_at FROM ${ended} e, ${locked} l, LATERAL (
             SELECT r.started_at, r.finished_at FROM runs r
              WHERE r.resource_id = ${owner} AND r.thread_id = l.id AND r.id <> e.id
                AND r.finished_at IS NOT NULL AND NOT r.stateless
              ORDER BY r.started_at DESC LIMIT 1) AS b
     WHERE NOT e.stateless`;
}
