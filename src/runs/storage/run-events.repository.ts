import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isDeadlock } from '../../database/database-errors';
import { queryPrepared } from '../../database/prepared';
import { ACTIVE } from './run.entity';

/**
 * SSE frames of one run with consecutive sequence numbers `first`…`last`, exactly as written to its
 * readers (`id: <seq>\ndata: <json>\n\n` each); `terminal` when they end with the terminal event.
 */
export type Chunk = { first: number; last: number; frames: string; terminal: boolean };

/**
 * Chunks of several runs to store in one statement, each written by the claim of its run that
 * `attempt` names: a chunk of a claim the run no longer has is refused (docs/durable-runs.md, "One
 * writer per run"). `firstTry`: the first write of these events by the run's live log, their only
 * writer, so nothing stored can start where they start; it is a plain insert, half the database's
 * work of one that checks for such a row (a row found anyway fails the statement, and the logs in
 * it try again). Other chunks may meet a stored one, a retried write whose first did commit or
 * another instance closing the same log, and are stored by insertChunks' rule.
 */
export type StoredChunk = Chunk & { runId: string; attempt: number; firstTry?: boolean };

/**
 * Why an append stored nothing of a run's chunk: `superseded`, another claim holds the run now (its
 * writer must stop, whatever it holds unstored was never sent); `early`, a terminal chunk of a run
 * whose row is still active (its end is not recorded yet: the log completes only with its row).
 */
export type Refused = { runId: string; reason: 'superseded' | 'early' };

/**
 * The channel on which a write announces the chunk it stored, for the runs someone follows:
 * `<first> <last> <terminal> <run id>`, then a newline and the frames when they fit in a
 * notification (a run id holds no newline), so a follower needs no read.
 */
export const RUN_EVENTS_CHANNEL = 'io_bridge_run_events';

/**
 * Writes of the event log in flight at once on an instance (RunLogWriter: each takes what the runs
 * produced meanwhile, a group commit); the claims leave them their connections (ConversationStore).
 */
export const EVENT_LOG_WRITES = 2;

/**
 * One read of a run's log (a page) returns at most this many chunks, and ends with the chunk that
 * reaches READ_PAGE_BYTES: a replay holds one page at a time, whatever the size of the log's
 * chunks, and a 3 MB log of one-frame chunks takes a few dozen reads, not hundreds.
 */
export const READ_PAGE = 1024;
export const READ_PAGE_BYTES = 256 * 1024;
/**
 * The page a join reads before any header (whether there is anything to stream) is its first chunk
 * and those that fit in 16 KiB: what a replay holds while it waits its turn to stream
 * (docs/limits.md#replays), so 400 waiting hold 6 MB, not 100.
 */
export const FIRST_PAGE_BYTES = 16 * 1024;

/** A page of a run's log: its chunks in order, and whether the log went on past them (read again from the last). */
export type Page = { chunks: Chunk[]; more: boolean };

/**
 * A log's unstored events, taken by its run's end to store in the statement that records it
 * (announced when someone follows the run elsewhere); the statement settles it: `superseded`,
 * another claim holds the run and nothing was stored.
 */
export type LogTail = { chunk: Chunk; announce: boolean; settle(result: Written): void };
type Written = 'stored' | 'superseded' | 'failed';

/** Frames up to this many bytes travel in the notification itself (Postgres allows 8000 in all). */
const NOTIFY_FRAMES_BYTES = 7000;

/**
 * A chunk starting where a stored one starts replaces it only when it extends it (a write retried
 * after a timeout that did commit carries the same frames and more): frames once stored may have
 * been sent, and are never replaced by others.
 */
const EXTEND_ONLY = `ON CONFLICT (run_id, first_seq) DO UPDATE
     SET last_seq = EXCLUDED.last_seq, frames = EXCLUDED.frames, terminal = EXCLUDED.terminal
    WHERE EXCLUDED.last_seq > run_events.last_seq AND starts_with(EXCLUDED.frames, run_events.frames)`;

/**
 * Stores the chunks `rows` selects (run_id, first_seq, last_seq, frames, terminal), returning those
 * stored, by the EXTEND_ONLY rule; `firstTry` (StoredChunk), as a plain insert, which a stored row
 * at the same start fails.
 */
export const insertChunks = (rows: string, { firstTry = false } = {}) =>
  `INSERT INTO run_events (run_id, first_seq, last_seq, frames, terminal) ${rows}
   ${firstTry ? '' : EXTEND_ONLY}
   RETURNING run_id, first_seq, last_seq, terminal, frames`;

/** The NOTIFY on RUN_EVENTS_CHANNEL of a row insertChunks returned (parseAnnouncement reads it). */
export const announcement = `pg_notify('${RUN_EVENTS_CHANNEL}',
  first_seq || ' ' || last_seq || ' ' || (CASE WHEN terminal THEN 't' ELSE 'f' END) || ' ' || run_id
  || (CASE WHEN octet_length(frames) <= ${NOTIFY_FRAMES_BYTES} THEN E'\\n' || frames ELSE '' END))`;

/** A chunk announced on RUN_EVENTS_CHANNEL: its run, and the chunk when its frames came with it. */
export function parseAnnouncement(payload: string): { runId: string; chunk?: Chunk } {
  const eol = payload.indexOf('\n');
  const [first, last, terminal, ...rest] = (eol < 0 ? payload : payload.slice(0, eol)).split(' ');
  const runId = rest.join(' ');
  if (eol < 0) return { runId };
  return {
    runId,
    chunk: {
      first: Number(first),
      last: Number(last),
      terminal: terminal === 't',
      frames: payload.slice(eol + 1),
    },
  };
}

/** The run whose terminal event an announcement on RUN_EVENTS_CHANNEL stored, or undefined. */
export function announcedEnd(payload: string): string | undefined {
  const [, , terminal] = payload.split('\n', 1)[0].split(' ', 3);
  return terminal === 't' ? parseAnnouncement(payload).runId : undefined;
}

/**
 * The event log of runs (`run_events`): what every reader of a run is sent, kept for
 * RUN_EVENTS_RETENTION_MS after the run ended. Reads are not scoped by owner here: the route reads
 * the run (scoped) first and reads its log only when the caller may see it.
 */
@Injectable()
export class RunEventsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Stores chunks and, for the runs in `announce`, NOTIFYs their new last sequence number when the
   * write commits; returns the runs whose chunk it refused. Each chunk is fenced by its run's row:
   * it is stored only while the row holds the writer's attempt (a key-share lock on the row, so a
   * claim taking the run over waits for this write, and no write of the earlier claim commits after
   * it), and a terminal chunk only once the row records the run's end. The fence is also what
   * keeps the table free of events of no run: it has no foreign key to `runs`.
   *
   * A chunk starting where a stored one starts replaces it only when it extends it (a write retried
   * after a timeout that did commit carries the same frames and more): frames once stored may have
   * been sent, and are never replaced by others. The commit does not wait for the WAL to reach disk
   * (`synchronous_commit` off for this transaction only): a follower on another replica waits on
   * this write, and a database crash loses at most the last moments of a replay log, never a run's
   * recorded end or messages (those commits stay synchronous).
   */
  async append(chunks: StoredChunk[], announce: string[]): Promise<Refused[]> {
    if (!chunks.length) return [];
    const params = [
      chunks.map((c) => c.runId),
      chunks.map((c) => c.first),
      chunks.map((c) => c.last),
      chunks.map((c) => c.frames),
      chunks.map((c) => c.terminal),
      announce,
      chunks.map((c) => c.attempt),
      chunks.map((c) => !!c.firstTry),
    ];
    const write = () =>
      queryPrepared<{ kind: 'n' | 's' | 'e'; run_id: string | null }>(
        this.db,
        'io-bridge.append-run-events',
        `WITH chunk AS (
           SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::boolean[], $7::int[], $8::boolean[])
             AS c(run_id, first_seq, last_seq, frames, terminal, attempt, first_try)),
         fence AS (
           SELECT r.id, r.${ACTIVE} AS active FROM runs r JOIN chunk c ON r.id = c.run_id AND r.attempt = c.attempt
            ORDER BY r.id FOR KEY SHARE OF r),
         fenced AS (
           SELECT c.run_id, c.first_seq, c.last_seq, c.frames, c.terminal, c.first_try FROM chunk c
             JOIN fence f ON f.id = c.run_id WHERE NOT (c.terminal AND f.active)),
         inserted AS (${insertChunks(
           `SELECT run_id, first_seq, last_seq, frames, terminal FROM fenced WHERE first_try`,
           { firstTry: true },
         )}),
         merged AS (${insertChunks(
           `SELECT run_id, first_seq, last_seq, frames, terminal FROM fenced WHERE NOT first_try`,
         )}),
         stored AS (SELECT * FROM inserted UNION ALL SELECT * FROM merged),
         notified AS (
           SELECT ${announcement} FROM stored CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
            WHERE run_id = ANY($6::text[]))
         SELECT 'n' AS kind, NULL AS run_id FROM (SELECT count(*) FROM notified) AS sent
         UNION ALL SELECT 's', c.run_id FROM chunk c WHERE NOT EXISTS (SELECT 1 FROM fence f WHERE f.id = c.run_id)
         UNION ALL SELECT 'e', c.run_id FROM chunk c JOIN fence f ON f.id = c.run_id WHERE c.terminal AND f.active`,
        params,
      );
    // Two writes locking the same runs in another order (a claim, a reap) may deadlock: once more.
    const rows = await write().catch((err: Error) => {
      if (isDeadlock(err)) return write();
      throw err;
    });
    return rows
      .filter((r) => r.kind !== 'n')
      .map((r) => ({ runId: r.run_id!, reason: r.kind === 's' ? 'superseded' : 'early' }));
  }

  /**
   * The run's stored chunks holding events after `after`, in order (the first may start before it),
   * a page of them (READ_PAGE, READ_PAGE_BYTES), and its terminal chunk in any case when the page
   * reaches it, so a reader that has everything learns the log is complete. `maxBytes` is the
   * page's size (the first chunk is always in it).
   */
  async page(runId: string, after: number, maxBytes = READ_PAGE_BYTES): Promise<Page> {
    // `upto`: the page's bytes up to and including the row; a row starting past the limit is left out.
    const rows = await queryPrepared<Chunk & { upto: number }>(
      this.db,
      'io-bridge.read-run-events',
      `SELECT first, last, frames, terminal, upto FROM (
         SELECT first_seq AS first, last_seq AS last, frames, terminal,
                (sum(octet_length(frames)) OVER (ORDER BY first_seq))::float8 AS upto
           FROM run_events
          WHERE run_id = $1 AND (last_seq > $2::bigint OR terminal) ORDER BY first_seq LIMIT $3) page
        WHERE upto - octet_length(frames) < $4`,
      [runId, after, READ_PAGE, maxBytes],
    );
    const last = rows.at(-1);
    const chunks = rows.map(({ first, last, frames, terminal }) => ({ first, last, frames, terminal }));
    // Cut by a limit (the row after the last one would start past READ_PAGE_BYTES), not by the log's end.
    const more = !!last && !last.terminal && (rows.length === READ_PAGE || last.upto >= maxBytes);
    return { chunks, more };
  }

  /** Whether any event of the run is stored. */
  async any(runId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query('SELECT 1 FROM run_events WHERE run_id = $1 LIMIT 1', [
      runId,
    ]);
    return rows.length > 0;
  }

  /** Deletes the logs of runs that ended more than `retentionMs` ago; returns how many chunks went. */
  async deleteExpired(retentionMs: number): Promise<number> {
    const [{ deleted }]: Array<{ deleted: number }> = await this.db.query(
      `WITH gone AS (
         DELETE FROM run_events e USING runs r
          WHERE e.run_id = r.id AND r.finished_at < now() - $1 * interval '1 millisecond'
          RETURNING 1)
       SELECT count(*)::int AS deleted FROM gone`,
      [retentionMs],
    );
    return deleted;
  }
}

/**
 * The frames of `chunk` after sequence number `after` (all of them when it starts later). Frames are
 * found by their `id:` line: a raw blank line only ever ends a frame, since JSON escapes newlines.
 */
export function framesAfter(chunk: Chunk, after: number): string {
  if (after < chunk.first) return chunk.frames;
  if (after >= chunk.last) return '';
  const at = chunk.frames.indexOf(`\n\nid: ${after + 1}\n`);
  return at < 0 ? '' : chunk.frames.slice(at + 2);
}
