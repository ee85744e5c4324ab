import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { StoredMessage } from '../../threads/message-format';
import { ACTIVE, unindexed } from '../storage/run.entity';

/** Runs were handed over (a replica drains): the others reap at once instead of at their interval. */
export const HANDED_OVER_CHANNEL = 'io_bridge_runs_handed_over';

/** A run handed over, with what its last checkpoint holds (LeaseHolder.checkpoint). */
export type HandedRun = {
  id: string;
  resourceId: string;
  attempt: number;
  messages?: StoredMessage[];
  progress?: StoredMessage[];
};

export type ReapLapsed = {
  threadId?: string;
  /** Claim the runs that can be continued (the reaper); false: leave them for it (a claim of their thread). */
  continue: boolean;
  leaseMs: number;
};

/** A lapsed run this replica claimed to continue: what its claim stored, and the messages of its completed steps. */
export type LapsedRun = {
  id: string;
  threadId: string;
  resourceId: string;
  stateless: boolean;
  input: { request: Record<string, unknown>; principal: { resourceId: string; admin: boolean } };
  progress: StoredMessage[] | null;
  attempt: number;
};

export type Reaped = { ended: string[]; continued: LapsedRun[]; nextLapseMs?: number };

/**
 * Runs whose lease lapsed: claimed to be continued here, or ended INTERRUPTED when they cannot be;
 * and runs this replica hands over (drain). Each one statement.
 */
@Injectable()
export class LapsedRuns {
  private readonly maxAttempts: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxAttempts = config.runMaxAttempts;
  }

  /**
   * Ends the lapsed runs of a thread that cannot be continued (out of attempts); those that can are
   * left to the reaper, which continues them. Returns the ids ended.
   */
  async endLapsed(threadId: string): Promise<string[]> {
    const reaped = await this.reapLapsed({ threadId, continue: false, leaseMs: 0 });
    return reaped.ended;
  }

  /**
   * The active runs whose lease lapsed (their replica died, or handed them over), in one statement
   * (only those of `threadId` when given). A run with attempts left and its input stored is claimed
   * for this replica to continue (`continue`): its attempt counted, its lease taken. The others (out
   * of attempts, or older than stored inputs) end as `error` INTERRUPTED, which frees their threads:
   * what such a run had shown (its last checkpoint) is appended to its thread, the text cut short
   * marked interrupted; a stateless run keeps nothing. Also says when the next lease lapses.
   */
  async reapLapsed(reap: ReapLapsed): Promise<Reaped> {
    const rows: Array<{ kind: 'e' | 'c' | 'n'; body: unknown }> = await this.db.query(
      `WITH continued AS (
         UPDATE runs SET attempt = attempt + 1, lease_expires_at = now() + $4 * interval '1 millisecond'
          WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
            AND $3::boolean AND attempt - handovers < $2 AND input IS NOT NULL
          RETURNING id, thread_id, resource_id, stateless, input, progress, attempt),
       lapsed AS (
         UPDATE runs SET status = 'error', error_code = 'INTERRUPTED', input = NULL, progress = NULL,
                error_message = 'The instance running it stopped', finished_at = now(), updated_at = now()
          WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
            AND (attempt - handovers >= $2 OR input IS NULL)
          RETURNING id, thread_id, resource_id, checkpoint, stateless),
       closed AS (
         UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM lapsed) AND status <> 'done'),
       owned AS (
         SELECT l.id, l.thread_id, l.checkpoint FROM lapsed l
           JOIN threads t ON t.id = l.thread_id AND t.resource_id = l.resource_id
          WHERE l.checkpoint IS NOT NULL AND NOT l.stateless
            FOR UPDATE OF t),
       appended AS (
         INSERT INTO messages (thread_id, id, position, role, body, run_id)
         SELECT o.thread_id, x.m->>'id',
                (SELECT COALESCE(max(position), 0) FROM messages WHERE thread_id = o.thread_id) + x.ord,
                x.m->>'role', x.m, o.id
           FROM owned o, jsonb_array_elements(o.checkpoint) WITH ORDINALITY AS x(m, ord)
         ON CONFLICT (thread_id, id) DO NOTHING RETURNING thread_id),
       touched AS (
         UPDATE threads SET updated_at = now() WHERE id IN (SELECT thread_id FROM appended))
       SELECT 'e' AS kind, to_jsonb(id) AS body FROM lapsed
       UNION ALL SELECT 'c', jsonb_build_object('id', id, 'threadId', thread_id, 'resourceId', resource_id,
                'stateless', stateless, 'input', input, 'progress', progress, 'attempt', attempt) FROM continued
       UNION ALL SELECT 'n', to_jsonb(ceil(extract(epoch FROM (min(lease_expires_at) - now())) * 1000))
         FROM runs WHERE ${ACTIVE} AND lease_expires_at >= now()`,
      [reap.threadId ?? null, this.maxAttempts, reap.continue, reap.leaseMs],
    );
    const next = rows.find((r) => r.kind === 'n')?.body;
    return {
      ended: rows.filter((r) => r.kind === 'e').map((r) => r.body as string),
      continued: rows.filter((r) => r.kind === 'c').map((r) => r.body as LapsedRun),
      ...(typeof next === 'number' ? { nextLapseMs: next } : {}),
    };
  }

  /**
   * Hands runs of this replica over (it drains): their last checkpoints written, their leases lapsed
   * now, their attempt not counted (a hand-over is no lost replica), and the other replicas told
   * (HANDED_OVER_CHANNEL) so that one claims them at once. Returns the ids handed over.
   */
  async handOver(runs: HandedRun[]): Promise<string[]> {
    if (!runs.length) return [];
    const rows: Array<{ id: string }> = await this.db.query(
      `WITH handed AS (
         UPDATE runs SET lease_expires_at = now() - interval '1 millisecond', handovers = handovers + 1,
                checkpoint = COALESCE(c.messages, runs.checkpoint), progress = COALESCE(c.progress, runs.progress)
           FROM jsonb_to_recordset($1::jsonb) AS c(id text, "resourceId" text, attempt int, messages jsonb, progress jsonb)
          WHERE runs.id = c.id AND ${unindexed(`runs.resource_id = c."resourceId" AND runs.attempt = c.attempt AND runs.${ACTIVE}`)}
          RETURNING runs.id),
       told AS (SELECT pg_notify('${HANDED_OVER_CHANNEL}', count(*)::text) FROM handed HAVING count(*) > 0)
       SELECT id FROM handed, (SELECT count(*) FROM told) AS sent`,
      [JSON.stringify(runs)],
    );
    return rows.map((r) => r.id);
  }

  /** The last `lastMessages` messages of the owner's thread, in order: the history a continued run starts from. */
  async history(threadId: string, resourceId: string, lastMessages: number): Promise<StoredMessage[]> {
    const rows: Array<{ body: StoredMessage }> = await this.db.query(
      `SELECT body FROM (
         SELECT m.body, m.position FROM messages m JOIN threads t ON t.id = m.thread_id AND t.resource_id = $2
          WHERE m.thread_id = $1 ORDER BY m.position DESC LIMIT $3) AS h
        ORDER BY position`,
      [threadId, resourceId, lastMessages],
    );
    return rows.map((r) => r.body);
  }
}
