import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ANY_OWNER, OwnerScope } from '../auth/principal';
import { DomainError } from '../common/errors';
import { isUniqueViolation } from '../threads/threads.repository';
import { StoredMessage } from '../threads/message-format';
import { ACTIVE, Run, RunStatus } from './run.entity';

export type RunEnd = {
  status: Extract<RunStatus, 'finished' | 'error' | 'cancelled'>;
  code?: string;
  message?: string;
};

export { ACTIVE };

/** Runs, scoped by their owner's resourceId wherever a client names one. */
@Injectable()
export class RunsRepository {
  constructor(@InjectRepository(Run) private readonly runs: Repository<Run>) {}

  /** Maps the unique violations of a run insert to their codes; any other error as it is. */
  conflict(err: unknown, runId: string, threadId: string): unknown {
    if (isUniqueViolation(err, 'runs_pkey')) {
      return new DomainError('RUN_ALREADY_EXISTS', `Run '${runId}' already exists`);
    }
    if (isUniqueViolation(err, 'runs_one_active_per_thread')) {
      return new DomainError('THREAD_BUSY', `Thread '${threadId}' has a run in progress`);
    }
    return err;
  }

  findOne(id: string, owner: OwnerScope): Promise<Run | null> {
    return this.runs.findOneBy(owner === ANY_OWNER ? { id } : { id, resourceId: owner });
  }

  /**
   * Extends the leases of the runs this instance holds; returns those still active. A run missing
   * from the answer was ended elsewhere (its lease lapsed and another instance reaped it).
   */
  async renewLeases(ids: string[], leaseMs: number): Promise<string[]> {
    if (!ids.length) return [];
    const rows: Array<{ id: string }> = await this.runs.query(
      `WITH renewed AS (
         UPDATE runs SET lease_expires_at = now() + $2 * interval '1 millisecond'
          WHERE id = ANY($1::text[]) AND ${ACTIVE} RETURNING id)
       SELECT id FROM renewed`,
      [ids, leaseMs],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Records what each run has shown so far (runId → its messages), renewing its lease in the same
   * write; returns the runs still active, as `renewLeases` does.
   */
  async saveCheckpoints(checkpoints: Record<string, StoredMessage[]>, leaseMs: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.runs.query(
      `WITH saved AS (
         UPDATE runs SET checkpoint = c.value, lease_expires_at = now() + $2 * interval '1 millisecond'
           FROM jsonb_each($1::jsonb) AS c
          WHERE runs.id = c.key AND runs.${ACTIVE} RETURNING runs.id)
       SELECT id FROM saved`,
      [JSON.stringify(checkpoints), leaseMs],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Ends active runs whose lease lapsed (their instance died) as `error` INTERRUPTED, which frees
   * their threads; only those of one thread when `threadId` is given. What such a run had shown
   * (its last checkpoint) is appended to its thread, the text cut short marked interrupted; a
   * stateless run keeps nothing.
   * Returns the ids ended.
   */
  async reapLapsed(threadId?: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.runs.query(
      `WITH lapsed AS (
         UPDATE runs SET status = 'error', error_code = 'INTERRUPTED',
                error_message = 'The instance running it stopped', finished_at = now(), updated_at = now()
          WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
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
       SELECT id FROM lapsed`,
      [threadId ?? null],
    );
    return rows.map((r) => r.id);
  }
}
