import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { StoredMessage } from './message-format';

export type MessageRow = { id: string; position: string; body: StoredMessage; createdAt: Date };

const MESSAGE_COLUMNS = `m.id, m.position::text AS position, m.body, m.created_at AS "createdAt"`;

/**
 * The `messages` table, read through the owner's thread: every method takes the owner's resourceId
 * and joins `threads` on it, so another owner's messages read as none. Messages are written only by
 * a run's statements (ConversationStore), never one at a time.
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
}
