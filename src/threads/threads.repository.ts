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
  /**
   * Its messages are the ones Mastra's memory keeps (`mastra_messages`): a thread Mastra wrote, which
   * io-bridge does not store, or stored only after Mastra had it (docs/protocol.md#threads-mastra-wrote).
   */
  messagesInMastra: boolean;
};

const THREAD_COLUMNS = `id, resource_id AS "resourceId", agent_id AS "agentId", title, metadata,
  created_at AS "createdAt", updated_at AS "updatedAt", updated_at::text AS "updatedKey",
  messages_in_mastra AS "messagesInMastra"`;

/** The columns of `threads` a union with Mastra's threads selects, before THREAD_COLUMNS names them. */
const THREAD_FIELDS =
  'id, resource_id, agent_id, title, metadata, created_at, updated_at, messages_in_mastra';

/** A row of `mastra_threads` (as `mt`, as `@mastra/pg` keeps it) in THREAD_FIELDS. */
const MASTRA_THREAD_FIELDS = `mt.id, mt."resourceId" AS resource_id, NULL::text AS agent_id, NULLIF(mt.title, '') AS title,
  CASE WHEN jsonb_typeof(mt.metadata) = 'object' THEN mt.metadata ELSE '{}'::jsonb END AS metadata,
  COALESCE(mt."createdAtZ", mt."createdAt" AT TIME ZONE 'UTC') AS created_at,
  COALESCE(mt."updatedAtZ", mt."updatedAt" AT TIME ZONE 'UTC') AS updated_at,
  true AS messages_in_mastra`;

/**
 * The threads an owner has in Mastra's memory that io-bridge does not store for that owner, in
 * THREAD_FIELDS; `where` scopes them.
 */
const mastraOnly = (where: string) => `
  SELECT ${MASTRA_THREAD_FIELDS}
    FROM mastra_threads mt
   WHERE ${where}
     AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = mt.id AND t.resource_id = mt."resourceId")`;

/** Whether Mastra's memory holds thread `$1` for owner `$2` already: then its messages are Mastra's. */
export const MASTRA_HOLDS_THREAD = `EXISTS (SELECT 1 FROM mastra_threads WHERE id = $1 AND "resourceId" = $2)`;

/**
 * The `threads` table, and the threads Mastra's memory holds that it does not (`mastra_threads`: a
 * thread Mastra Studio, a workflow or a team's own code wrote). Every method takes the owner's
 * resourceId and filters on it in SQL: another owner's thread behaves exactly like a missing one.
 * Those a route reaches by id alone take an OwnerScope, which may be any owner (see `idScope`). A
 * thread's messages: MessagesRepository.
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
      `INSERT INTO threads (id, resource_id, agent_id, title, metadata, messages_in_mastra)
       VALUES ($1, $2, $3, $4, $5::jsonb, ${MASTRA_HOLDS_THREAD})
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
      `SELECT ${THREAD_COLUMNS} FROM (
         SELECT ${THREAD_FIELDS} FROM threads WHERE id = $1 AND ($2::text IS NULL OR resource_id = $2)
         UNION ALL ${mastraOnly(`mt.id = $1 AND ($2::text IS NULL OR mt."resourceId" = $2)`)}
       ) AS owned LIMIT 1`,
      [id, ownerParam(owner)],
    );
    return rows[0];
  }

  /**
   * Newest `updatedAt` first, keyset pagination on (updated_at, id): stable across inserts. The
   * owner's threads in Mastra's memory are among them, unless the page is of one agent's.
   */
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
    const mastra = opts.agentId === undefined ? `UNION ALL ${mastraOnly(`mt."resourceId" = $1`)}` : '';
    return this.db.query(
      `SELECT ${THREAD_COLUMNS} FROM (
         SELECT ${THREAD_FIELDS} FROM threads WHERE resource_id = $1 ${mastra}
       ) AS owned WHERE ${where} ORDER BY updated_at DESC, id DESC LIMIT $2`,
      params,
    );
  }

  /**
   * Changes the title or metadata of the thread: in io-bridge's table, and the title in Mastra's
   * memory too when it holds the thread. A thread only Mastra holds gets the metadata merged into
   * its own (keys Mastra keeps there, such as a thread's working memory, stay).
   */
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
         WHERE id = $1 AND ($2::text IS NULL OR resource_id = $2)
         RETURNING ${THREAD_FIELDS}),
       in_mastra AS (
         UPDATE mastra_threads mt SET
           title = CASE WHEN $3::boolean THEN $4 ELSE mt.title END,
           metadata = CASE WHEN $5::boolean AND NOT EXISTS (SELECT 1 FROM updated)
                           THEN COALESCE(mt.metadata, '{}'::jsonb) || $6::jsonb ELSE mt.metadata END,
           "updatedAt" = now() AT TIME ZONE 'UTC', "updatedAtZ" = now()
         WHERE mt.id = $1 AND ($2::text IS NULL OR mt."resourceId" = $2)
           AND (NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = mt.id AND t.resource_id = mt."resourceId")
                OR EXISTS (SELECT 1 FROM updated u WHERE u.resource_id = mt."resourceId"))
         RETURNING ${MASTRA_THREAD_FIELDS})
       SELECT ${THREAD_COLUMNS} FROM (
         SELECT * FROM updated UNION ALL SELECT * FROM in_mastra WHERE NOT EXISTS (SELECT 1 FROM updated)
       ) AS owned`,
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

  /**
   * Deletes the owner's thread and its messages, from io-bridge's tables (by cascade) and from
   * Mastra's memory; returns whether it existed in either.
   */
  async delete(id: string, resourceId: string): Promise<boolean> {
    const rows: Array<{ deleted: number }> = await this.db.query(
      `WITH deleted AS (DELETE FROM threads WHERE id = $1 AND resource_id = $2 RETURNING 1),
       in_mastra AS (DELETE FROM mastra_threads WHERE id = $1 AND "resourceId" = $2 RETURNING 1),
       messages AS (DELETE FROM mastra_messages WHERE thread_id = $1 AND EXISTS (SELECT 1 FROM in_mastra) RETURNING 1)
       SELECT (SELECT count(*) FROM deleted) + (SELECT count(*) FROM in_mastra) AS deleted`,
      [id, resourceId],
    );
    return Number(rows[0]?.deleted ?? 0) > 0;
  }

  /** Titles the owner's thread, unless it got a title meanwhile. */
  async setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    await this.db.query(
      `UPDATE threads SET title = $3 WHERE id = $1 AND resource_id = $2 AND title IS NULL`,
      [threadId, resourceId, title],
    );
  }
}
