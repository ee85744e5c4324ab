import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { StoredMessage } from './message-format';
import { MastraRow } from './mastra-format';

export type MessageRow = { id: string; position: string; body: StoredMessage; createdAt: Date };

/** A message of Mastra's memory, with its place in the thread (1 for the oldest). */
export type MastraMessageRow = MastraRow & { position: string };

const MESSAGE_COLUMNS = `m.id, m.position::text AS position, m.body, m.created_at AS "createdAt"`;

/**
 * The `messages` table, read through the owner's thread: every method takes the owner's resourceId
 * and joins `threads` on it, so another owner's messages read as none. Messages are written only by
 * a run's statements (ConversationStore), never one at a time. The messages of a thread in Mastra's
 * memory (`mastra_messages`) are read the same way, through `mastra_threads`.
 */
@Injectable()
export class MessagesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The latest `limit` messages before position `before` (exclusive), oldest first. */
  async list(
    threadId: string,
    resourceId: string,
    opts: { limit: number; before?: string },
  ): Promise<MessageRow[]> {
    const rows: MessageRow[] = await this.db.query(
      `SELECT ${MESSAGE_COLUMNS}
         FROM messages m JOIN threads t ON t.id = m.thread_id
        WHERE m.thread_id = $1 AND t.resource_id = $2 AND ($4::bigint IS NULL OR m.position < $4::bigint)
        ORDER BY m.position DESC LIMIT $3`,
      [threadId, resourceId, opts.limit, opts.before ?? null],
    );
    return rows.reverse();
  }

  /** Results of these tool calls stored in the thread (for `ui` parts whose result is on another page). */
  async toolResults(threadId: string, resourceId: string, toolCallIds: string[]): Promise<MessageRow[]> {
    if (!toolCallIds.length) return [];
    return this.db.query(
      `SELECT ${MESSAGE_COLUMNS}
         FROM messages m JOIN threads t ON t.id = m.thread_id
        WHERE m.thread_id = $1 AND t.resource_id = $2 AND m.role = 'tool' AND m.body->>'toolCallId' = ANY($3::text[])`,
      [threadId, resourceId, toolCallIds],
    );
  }

  /**
   * The latest `limit` messages of the owner's thread in Mastra's memory before place `before`
   * (exclusive), oldest first; their places count Mastra's order (created, then id) from 1.
   */
  async listInMastra(
    threadId: string,
    resourceId: string,
    opts: { limit: number; before?: string },
  ): Promise<MastraMessageRow[]> {
    const rows: MastraMessageRow[] = await this.db.query(
      `SELECT id, role, content, "createdAt", position::text AS position FROM (
         SELECT m.id, m.role, m.content, COALESCE(m."createdAtZ", m."createdAt" AT TIME ZONE 'UTC') AS "createdAt",
                row_number() OVER (ORDER BY COALESCE(m."createdAtZ", m."createdAt" AT TIME ZONE 'UTC'), m.id) AS position
           FROM mastra_messages m
          WHERE m.thread_id = $1
            AND EXISTS (SELECT 1 FROM mastra_threads t WHERE t.id = $1 AND t."resourceId" = $2)
       ) AS placed
       WHERE $4::bigint IS NULL OR position < $4::bigint
       ORDER BY position DESC LIMIT $3`,
      [threadId, resourceId, opts.limit, opts.before ?? null],
    );
    return rows.reverse();
  }
}
