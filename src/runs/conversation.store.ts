import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/errors';
import { queryPrepared } from '../database/prepared';
import { StoredMessage } from '../threads/message-format';
import { ThreadsRepository } from '../threads/threads.repository';
import { ACTIVE, RunEnd, RunsRepository } from './runs.repository';

export type ClaimRun = {
  threadId: string;
  runId: string;
  resourceId: string;
  agentId: string;
  leaseMs: number;
  /** Title for a thread that has none (from the first user message), unless the model will be asked. */
  title?: string;
  incoming: StoredMessage[];
  lastMessages: number;
  /** Store none of the incoming messages (memoryOptions.readOnly). */
  readOnly: boolean;
};

export type EndRun = {
  threadId: string;
  runId: string;
  resourceId: string;
  end: RunEnd;
  produced: StoredMessage[];
};

/**
 * A conversation on the server: a run's writes, each one statement (one round trip, atomic).
 * Before the stream: the owner's thread (created on the first run), the run with its lease, the
 * incoming messages not stored yet, and the history the model sees: what can be refused is refused
 * there. Before the terminal event: the run's end and the messages it produced.
 */
@Injectable()
export class ConversationStore {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly threads: ThreadsRepository,
    private readonly runs: RunsRepository,
  ) {}

  /**
   * Claims the run, in one statement (one round trip, one commit): the owner's thread is created or
   * touched (another owner's thread is a 404, as if missing), the run is recorded with its lease
   * (RUN_ALREADY_EXISTS, or THREAD_BUSY unless the busy run's lease lapsed), and the incoming
   * messages the thread does not store yet are appended (unless read-only). Returns what the model
   * sees: the stored history (its last `lastMessages`) followed by those new messages.
   */
  async claim(run: ClaimRun): Promise<StoredMessage[]> {
    try {
      return await this.claimOnce(run);
    } catch (err) {
      // A run whose instance died holds the thread until its lease lapses: end it, then try once more.
      if (!(err instanceof DomainError && err.code === 'THREAD_BUSY')) throw err;
      if (!(await this.runs.reapLapsed(run.threadId)).length) throw err;
      return this.claimOnce(run);
    }
  }

  private async claimOnce(run: ClaimRun): Promise<StoredMessage[]> {
    let rows: Array<{ kind: 'r' | 'h' | 's'; body: StoredMessage | string | null }>;
    try {
      rows = await queryPrepared(
        this.db,
        'io-bridge.claim-run',
        `WITH thread AS (
           INSERT INTO threads (id, resource_id, agent_id, title) VALUES ($1, $2, $3, $4)
           ON CONFLICT (id) DO UPDATE SET updated_at = now(), title = COALESCE(threads.title, EXCLUDED.title)
             WHERE threads.resource_id = EXCLUDED.resource_id
           RETURNING id),
         run AS (
           INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at)
           SELECT $5, id, $2, $3, 'running', now() + $6 * interval '1 millisecond' FROM thread
           RETURNING id),
         stored AS (
           SELECT m.id FROM messages m
            WHERE m.thread_id = $1 AND m.id = ANY($7::text[]) AND EXISTS (SELECT 1 FROM thread)),
         history AS (
           SELECT m.body, m.position FROM messages m WHERE m.thread_id = $1 AND EXISTS (SELECT 1 FROM thread)
            ORDER BY m.position DESC LIMIT $8),
         base AS (SELECT COALESCE(max(position), 0) AS last FROM messages WHERE thread_id = $1),
         fresh AS (
           SELECT x.m, row_number() OVER (ORDER BY x.ord) AS n
             FROM jsonb_array_elements($9::jsonb) WITH ORDINALITY AS x(m, ord)
            WHERE NOT EXISTS (SELECT 1 FROM stored s WHERE s.id = x.m->>'id')),
         appended AS (
           INSERT INTO messages (thread_id, id, position, role, body, run_id)
           SELECT $1, f.m->>'id', base.last + f.n, f.m->>'role', f.m, $5 FROM fresh f, base
            WHERE NOT $10::boolean AND EXISTS (SELECT 1 FROM run)
           ON CONFLICT (thread_id, id) DO NOTHING RETURNING 1)
         SELECT 'r' AS kind, NULL::jsonb AS body, NULL::bigint AS position FROM run
         UNION ALL SELECT 'h', body, position FROM history
         UNION ALL SELECT 's', to_jsonb(id), NULL FROM stored
         ORDER BY kind, position`,
        [
          run.threadId,
          run.resourceId,
          run.agentId,
          run.title ?? null,
          run.runId,
          run.leaseMs,
          run.incoming.map((m) => m.id),
          run.lastMessages,
          JSON.stringify(run.incoming),
          run.readOnly,
        ],
      );
    } catch (err) {
      throw this.runs.conflict(err, run.runId, run.threadId);
    }
    if (!rows.some((r) => r.kind === 'r'))
      throw new DomainError('NOT_FOUND', `Thread '${run.threadId}' not found`);
    const history = rows.filter((r) => r.kind === 'h').map((r) => r.body as StoredMessage);
    const stored = new Set(rows.filter((r) => r.kind === 's').map((r) => r.body as string));
    return [...history, ...run.incoming.filter((m) => !stored.has(m.id))];
  }

  setTitleIfNone(threadId: string, resourceId: string, title: string): Promise<void> {
    return this.threads.setTitleIfNone(threadId, resourceId, title);
  }

  /**
   * The run's end and what it produced, in one statement; nothing is stored into a thread that was
   * deleted meanwhile, nor by a run another instance already ended (its lease lapsed: that record
   * and the checkpoint it kept stand). Unanswered tool calls close with the run.
   */
  async endRun(run: EndRun): Promise<void> {
    await queryPrepared(
      this.db,
      'io-bridge.end-run',
      `WITH ended AS (
         UPDATE runs SET status = $3, error_code = $4, error_message = $5, finished_at = now(), updated_at = now(),
                checkpoint = NULL
          WHERE id = $1 AND resource_id = $2 AND ${ACTIVE} RETURNING id),
       closed AS (
         UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM ended) AND status <> 'done'),
       owned AS (SELECT id FROM threads WHERE id = $6 AND resource_id = $2 FOR UPDATE),
       base AS (SELECT COALESCE(max(position), 0) AS last FROM messages WHERE thread_id IN (SELECT id FROM owned)),
       appended AS (
         INSERT INTO messages (thread_id, id, position, role, body, run_id)
         SELECT $6, x.m->>'id', base.last + x.ord, x.m->>'role', x.m, $1
           FROM jsonb_array_elements($7::jsonb) WITH ORDINALITY AS x(m, ord), base
          WHERE EXISTS (SELECT 1 FROM owned) AND EXISTS (SELECT 1 FROM ended)
         ON CONFLICT (thread_id, id) DO NOTHING RETURNING 1)
       UPDATE threads SET updated_at = now()
        WHERE id IN (SELECT id FROM owned) AND EXISTS (SELECT 1 FROM appended)`,
      [
        run.runId,
        run.resourceId,
        run.end.status,
        run.end.code ?? null,
        run.end.message ?? null,
        run.threadId,
        JSON.stringify(run.produced),
      ],
    );
  }
}
