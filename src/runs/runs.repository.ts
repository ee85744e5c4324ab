import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { DomainError } from '../common/errors';
import { isUniqueViolation } from '../threads/threads.repository';
import { Run, RunStatus } from './run.entity';

export type RunEnd = {
  status: Extract<RunStatus, 'finished' | 'error' | 'cancelled'>;
  code?: string;
  message?: string;
};

/** The SQL condition for a run still in progress. */
export const ACTIVE = `status IN ('running', 'waiting_for_tool')`;

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

  findOne(id: string, resourceId: string): Promise<Run | null> {
    return this.runs.findOneBy({ id, resourceId });
  }

  /** Any owner's run: for admin reads only (ADMIN_ROLE); everything else goes through `findOne`. */
  findAny(id: string): Promise<Run | null> {
    return this.runs.findOneBy({ id });
  }

  /** Extends the leases of the runs this instance holds. */
  async renewLeases(ids: string[], leaseMs: number): Promise<void> {
    if (!ids.length) return;
    await this.runs.query(
      `UPDATE runs SET lease_expires_at = now() + $2 * interval '1 millisecond'
        WHERE id = ANY($1::text[]) AND ${ACTIVE}`,
      [ids, leaseMs],
    );
  }

  /**
   * Ends active runs whose lease lapsed (their instance died) as `error` INTERRUPTED, which frees
   * their threads; only those of one thread when `threadId` is given. Returns the ids ended.
   */
  async reapLapsed(threadId?: string): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.runs.query(
      `WITH lapsed AS (
         UPDATE runs SET status = 'error', error_code = 'INTERRUPTED',
                error_message = 'The instance running it stopped', finished_at = now(), updated_at = now()
          WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
          RETURNING id),
       closed AS (
         UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM lapsed) AND status <> 'done')
       SELECT id FROM lapsed`,
      [threadId ?? null],
    );
    return rows.map((r) => r.id);
  }
}
