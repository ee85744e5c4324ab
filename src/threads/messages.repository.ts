import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MastraRow } from './mastra-format';

/**
 * Where a page of a thread's messages ends: a row's place in Mastra's order (its time, then its id).
 * `at` is the time as the database keeps it (`"createdAt"`, to the microsecond, as text), so a page
 * starts exactly after it.
 */
export type MessagesCursor = { at: string; id: string };

/** A row of a thread's messages, with its place in the thread. */
export type MessageRow = MastraRow & { at: string };

/** A row of `mastra_messages` (as `m`) as a MastraRow; a row an older `@mastra/pg` wrote may lack the time-zoned time. */
export const MESSAGE_ROW_COLUMNS = `m.id, m.role, m.content, COALESCE(m."createdAtZ", m."createdAt" AT TIME ZONE 'UTC') AS "createdAt"`;

/**
 * The latest `$3` rows of thread `$1`, owned by `$2`, before the row at `($4, $5)` (exclusive;
 * `$4` null: the latest), newest first in Mastra's order (created, then id). A page reads only its
 * own rows from the thread's index, however long the thread.
 */
export const MESSAGES_PAGE_SQL = `SELECT ${MESSAGE_ROW_COLUMNS}, to_char(m."createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at
    FROM mastra_messages m
   WHERE m.thread_id = $1
     AND EXISTS (SELECT 1 FROM mastra_threads t WHERE t.id = $1 AND t."resourceId" = $2)
     AND m."createdAt" <= COALESCE($4::timestamp, 'infinity')
     AND ($4::timestamp IS NULL OR m."createdAt" < $4::timestamp OR m.id < $5::text)
   ORDER BY m."createdAt" DESC, m.id DESC LIMIT $3`;

/**
 * A thread's messages: the rows of Mastra's memory (`mastra_messages`, mastra-rows.ts), read
 * through the owner's thread (`mastra_threads`), so another owner's messages read as none. Rows are
 * written only by a run's statements (ConversationStore), never one at a time, and by Mastra.
 */
@Injectable()
export class MessagesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The latest `limit` rows of the owner's thread before row `before` (exclusive), oldest first (MESSAGES_PAGE_SQL). */
  async list(
    threadId: string,
    resourceId: string,
    opts: { limit: number; before?: MessagesCursor },
  ): Promise<MessageRow[]> {
    const rows: MessageRow[] = await this.db.query(MESSAGES_PAGE_SQL, [
      threadId,
      resourceId,
      opts.limit,
      opts.before?.at ?? null,
      opts.before?.id ?? null,
    ]);
    return rows.reverse();
  }

  /** The assistant rows of the owner's thread that made these tool calls, in the thread's order. */
  async callers(threadId: string, resourceId: string, toolCallIds: string[]): Promise<MastraRow[]> {
    if (!toolCallIds.length) return [];
    return this.db.query(
      `SELECT ${MESSAGE_ROW_COLUMNS}
         FROM mastra_messages m JOIN mastra_threads t ON t.id = m.thread_id AND t."resourceId" = $2
        WHERE m.thread_id = $1 AND m.role = 'assistant'
          AND EXISTS (SELECT 1 FROM unnest($3::text[]) AS c(id) WHERE strpos(m.content, to_json(c.id)::text) > 0)
        ORDER BY m."createdAt", m.id`,
      [threadId, resourceId, toolCallIds],
    );
  }
}
