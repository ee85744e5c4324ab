import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MastraRow } from './mastra-format';

/** A row of a thread's messages, with its place in the thread (1 for the oldest). */
export type MessageRow = MastraRow & { position: string };

/** A row of `mastra_messages` (as `m`) as a MastraRow; a row an older `@mastra/pg` wrote may lack the time-zoned time. */
export const MESSAGE_ROW_COLUMNS = `m.id, m.role, m.content, COALESCE(m."createdAtZ", m."createdAt" AT TIME ZONE 'UTC') AS "createdAt"`;

/**
 * The latest `$3` rows of thread `$1`, owned by `$2`, before place `$4` (exclusive; null: the
 * latest), newest first; their places count Mastra's order (created, then id) from 1.
 */
export const MESSAGES_PAGE_SQL = `SELECT id, role, content, "createdAt", position::text AS position FROM (
    SELECT ${MESSAGE_ROW_COLUMNS}, row_number() OVER (ORDER BY m."createdAt", m.id) AS position
      FROM mastra_messages m
     WHERE m.thread_id = $1
       AND EXISTS (SELECT 1 FROM mastra_threads t WHERE t.id = $1 AND t."resourceId" = $2)
  ) AS placed
  WHERE $4::bigint IS NULL OR position < $4::bigint
  ORDER BY placed.position DESC LIMIT $3`;

/**
 * A thread's messages: the rows of Mastra's memory (`mastra_messages`, mastra-rows.ts), read
 * through the owner's thread (`mastra_threads`), so another owner's messages read as none. Rows are
 * written only by a run's statements (ConversationStore), never one at a time, and by Mastra.
 */
@Injectable()
export class MessagesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The latest `limit` rows of the owner's thread before place `before` (exclusive), oldest first (MESSAGES_PAGE_SQL). */
  async list(
    threadId: string,
    resourceId: string,
    opts: { limit: number; before?: string },
  ): Promise<MessageRow[]> {
    const rows: MessageRow[] = await this.db.query(MESSAGES_PAGE_SQL, [
      threadId,
      resourceId,
      opts.limit,
      opts.before ?? null,
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
