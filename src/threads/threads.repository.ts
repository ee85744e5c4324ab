import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { OwnerScope, ownerParam } from '../auth/principal';

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

const THREAD_COLUMNS = `id, resource_id AS "resourceId", agent_id AS "agentId", title, metadata,
  created_at AS "createdAt", updated_at AS "updatedAt", updated_at::text AS "updatedKey"`;

/**
 * The `threads` table. Every method takes the owner's resourceId and filters on it in SQL: another
 * owner's thread behaves exactly like a missing one. Those a route reaches by id alone take an
 * OwnerScope, which may be any owner (see `idScope`). A thread's messages: MessagesRepository.
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

  /** Titles the owner's thread, unless it got a title meanwhile. */
  async setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    await this.db.query(
      `UPDATE threads SET title = $3 WHERE id = $1 AND resource_id = $2 AND title IS NULL`,
      [threadId, resourceId, title],
    );
  }
}
