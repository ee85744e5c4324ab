import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, QueryFailedError } from 'typeorm';
import { OwnerScope, ownerParam } from '../auth/principal';
import { ACTIVE } from '../runs/run.entity';
import { StoredMessage } from './message-format';

export type ThreadRow = {
  id: string;
  resourceId: string;
  agentId: string | null;
  title: string | null;
  metadata: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  /** `updated_at` as Postgres prints it, microseconds included: the keyset cursor. */
  updatedKey: string;
};

export type MessageRow = { id: string; position: string; body: StoredMessage; createdAt: Date };

const THREAD_COLUMNS = `id, resource_id AS "resourceId", agent_id AS "agentId", title, metadata,
  created_at AS "createdAt", updated_at AS "updatedAt", updated_at::text AS "updatedKey"`;

const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (!(err instanceof QueryFailedError)) return false;
  const driver = err.driverError as { code?: string; constraint?: string };
  return driver?.code === UNIQUE_VIOLATION && (constraint === undefined || driver.constraint === constraint);
}

/**
 * Threads and messages. Every method that reads or writes them takes the owner's resourceId and
 * filters on it in SQL: another owner's thread behaves exactly like a missing one. Those a route
 * reaches by id alone take an OwnerScope, which may be any owner (see `idScope`).
 */
@Injectable()
export class ThreadsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Creates the thread; returns undefined when the id exists already (whoever holds it). */
  async insert(thread: {
    id: string;
    resourceId: string;
    agentId?: string;
    title?: string;
    metadata?: Record<string, unknown>;
  }): Promise<ThreadRow | undefined> {
    const rows: ThreadRow[] = await this.db.query(
      `INSERT INTO threads (id, resource_id, agent_id, title, metadata) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (id) DO NOTHING RETURNING ${THREAD_COLUMNS}`,
      [
        thread.id,
        thread.resourceId,
        thread.agentId ?? null,
        thread.title ?? null,
        JSON.stringify(thread.metadata ?? {}),
      ],
    );
    return rows[0];
  }

  async find(id: string, owner: OwnerScope): Promise<ThreadRow | undefined> {
    const rows: ThreadRow[] = await this.db.query(
      `SELECT ${THREAD_COLUMNS} FROM threads WHERE id = $1 AND ($2::text IS NULL OR resource_id = $2)`,
      [id, ownerParam(owner)],
    );
    return rows[0];
  }

  /** Newest `updatedAt` first, keyset pagination on (updated_at, id): stable across inserts. */
  async list(
    resourceId: string,
    opts: { agentId?: string; limit: number; after?: { updatedKey: string; id: string } },
  ): Promise<ThreadRow[]> {
    const params: unknown[] = [resourceId, opts.limit];
    let where = 'resource_id = $1';
    if (opts.agentId !== undefined) {
      params.push(opts.agentId);
      where += ` AND agent_id = $${params.length}`;
    }
    if (opts.after) {
      params.push(opts.after.updatedKey, opts.after.id);
      where += ` AND (updated_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`;
    }
    return this.db.query(
      `SELECT ${THREAD_COLUMNS} FROM threads WHERE ${where} ORDER BY updated_at DESC, id DESC LIMIT $2`,
      params,
    );
  }

  async update(
    id: string,
    owner: OwnerScope,
    patch: { title?: string; metadata?: Record<string, unknown> },
  ): Promise<ThreadRow | undefined> {
    const rows: ThreadRow[] = await this.db.query(
      `WITH updated AS (
         UPDATE threads SET
           title = CASE WHEN $3::boolean THEN $4 ELSE title END,
           metadata = CASE WHEN $5::boolean THEN $6::jsonb ELSE metadata END,
           updated_at = now()
         WHERE id = $1 AND ($2::text IS NULL OR resource_id = $2) RETURNING *)
       SELECT ${THREAD_COLUMNS} FROM updated`,
      [
        id,
        ownerParam(owner),
        patch.title !== undefined,
        patch.title ?? null,
        patch.metadata !== undefined,
        JSON.stringify(patch.metadata ?? {}),
      ],
    );
    return rows[0];
  }

  /** Deletes the owner's thread and (by cascade) its messages; returns whether it existed. */
  async delete(id: string, resourceId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `WITH deleted AS (DELETE FROM threads WHERE id = $1 AND resource_id = $2 RETURNING 1) SELECT * FROM deleted`,
      [id, resourceId],
    );
    return rows.length > 0;
  }

  /** The latest `limit` messages before position `before` (exclusive), oldest first. */
  async messages(
    threadId: string,
    resourceId: string,
    opts: { limit: number; before?: string },
  ): Promise<MessageRow[]> {
    const rows: MessageRow[] = await this.db.query(
      `SELECT m.id, m.position::text AS position, m.body, m.created_at AS "createdAt"
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
      `SELECT m.id, m.position::text AS position, m.body, m.created_at AS "createdAt"
         FROM messages m JOIN threads t ON t.id = m.thread_id
        WHERE m.thread_id = $1 AND t.resource_id = $2 AND m.role = 'tool' AND m.body->>'toolCallId' = ANY($3::text[])`,
      [threadId, resourceId, toolCallIds],
    );
  }

  /**
   * The active run of the owner's thread, if any (a deleted thread's run is cancelled first); a
   * stateless run that merely shares the id is not the thread's.
   */
  async activeRunId(threadId: string, resourceId: string): Promise<string | undefined> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM runs WHERE thread_id = $1 AND resource_id = $2 AND NOT stateless AND ${ACTIVE}`,
      [threadId, resourceId],
    );
    return rows[0]?.id;
  }

  /** Titles the owner's thread, unless it got a title meanwhile. */
  async setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    await this.db.query(
      `UPDATE threads SET title = $3 WHERE id = $1 AND resource_id = $2 AND title IS NULL`,
      [threadId, resourceId, title],
    );
  }
}
