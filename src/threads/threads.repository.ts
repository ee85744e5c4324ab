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
  /** `updatedAtZ` as Postgres prints it, microseconds included: the keyset cursor. */
  updatedKey: string;
};

/**
 * A row of `mastra_threads` as a thread: Mastra's own columns (an untitled thread's title is '', a
 * row an older `@mastra/pg` wrote may lack the time-zoned times) and the agent io-bridge adds.
 */
export const THREAD_COLUMNS = `id, "resourceId", io_bridge_agent_id AS "agentId", NULLIF(title, '') AS title,
  CASE WHEN jsonb_typeof(metadata) = 'object' THEN metadata ELSE '{}'::jsonb END AS metadata,
  COALESCE("createdAtZ", "createdAt" AT TIME ZONE 'UTC') AS "createdAt", "updatedAtZ" AS "updatedAt",
  "updatedAtZ"::text AS "updatedKey"`;

/**
 * Threads, in Mastra's memory (`mastra_threads`): those io-bridge's runs and routes made, and those
 * Mastra Studio, a workflow or a team's own code wrote (docs/protocol.md#where-threads-live). Every method
 * takes the owner's resourceId and filters on it in SQL: another owner's thread behaves exactly like
 * a missing one. Those a route reaches by id alone take an OwnerScope, which may be any owner (see
 * `idScope`). A thread's messages: MessagesRepository.
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
      `INSERT INTO mastra_threads (id, "resourceId", io_bridge_agent_id, title, metadata,
                                   "createdAt", "updatedAt", "createdAtZ", "updatedAtZ")
       VALUES ($1, $2, $3, COALESCE($4, ''), $5::jsonb, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now(), now())
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
      `SELECT ${THREAD_COLUMNS} FROM mastra_threads WHERE id = $1 AND ($2::text IS NULL OR "resourceId" = $2)`,
      [id, ownerParam(owner)],
    );
    return rows[0];
  }

  /** Newest `updatedAt` first, keyset pagination on (updatedAt, id): stable across inserts. */
  async list(
    resourceId: string,
    opts: { agentId?: string; limit: number; after?: { updatedKey: string; id: string } },
  ): Promise<ThreadRow[]> {
    const params: unknown[] = [resourceId, opts.limit];
    let where = '"resourceId" = $1';
    if (opts.agentId !== undefined) {
      params.push(opts.agentId);
      where += ` AND io_bridge_agent_id = $${params.length}`;
    }
    if (opts.after) {
      params.push(opts.after.updatedKey, opts.after.id);
      where += ` AND ("updatedAtZ", id) < ($${params.length - 1}::timestamptz, $${params.length})`;
    }
    return this.db.query(
      `SELECT ${THREAD_COLUMNS} FROM mastra_threads WHERE ${where} ORDER BY "updatedAtZ" DESC, id DESC LIMIT $2`,
      params,
    );
  }

  /**
   * Changes the title or metadata of the thread. Metadata replaces the old one, except the key
   * Mastra's memory keeps there (`workingMemory`, a thread's working memory), which stays.
   */
  async update(
    id: string,
    owner: OwnerScope,
    patch: { title?: string; metadata?: Record<string, unknown> },
  ): Promise<ThreadRow | undefined> {
    const rows: ThreadRow[] = await this.db.query(
      `WITH updated AS (
       UPDATE mastra_threads SET
         title = CASE WHEN $3::boolean THEN COALESCE($4, '') ELSE title END,
         metadata = CASE WHEN NOT $5::boolean THEN metadata
                         WHEN jsonb_typeof(metadata) = 'object' AND metadata ? 'workingMemory'
                         THEN jsonb_build_object('workingMemory', metadata->'workingMemory') || $6::jsonb
                         ELSE $6::jsonb END,
         "updatedAt" = now() AT TIME ZONE 'UTC', "updatedAtZ" = now()
       WHERE id = $1 AND ($2::text IS NULL OR "resourceId" = $2)
       RETURNING *)
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

  /** Deletes the owner's thread and its messages; returns whether it existed. */
  async delete(id: string, resourceId: string): Promise<boolean> {
    const rows: Array<{ deleted: number }> = await this.db.query(
      `WITH deleted AS (DELETE FROM mastra_threads WHERE id = $1 AND "resourceId" = $2 RETURNING id),
       messages AS (DELETE FROM mastra_messages WHERE thread_id IN (SELECT id FROM deleted) RETURNING 1)
       SELECT count(*)::int AS deleted FROM deleted`,
      [id, resourceId],
    );
    return (rows[0]?.deleted ?? 0) > 0;
  }

  /** Titles the owner's thread, unless it got a title meanwhile. */
  async setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    await this.db.query(
      `UPDATE mastra_threads SET title = $3 WHERE id = $1 AND "resourceId" = $2 AND title = ''`,
      [threadId, resourceId, title],
    );
  }
}
