import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { QueryFailedError, Repository } from 'typeorm';
import { DomainError } from '../common/errors';
import { Run, RunStatus } from './run.entity';

const UNIQUE_VIOLATION = '23505';

export type NewRun = { id: string; threadId: string; resourceId: string; agentId: string };
export type RunEnd = {
  status: Extract<RunStatus, 'finished' | 'error' | 'cancelled'>;
  code?: string;
  message?: string;
};

/** Runs, always scoped by their owner's resourceId. */
@Injectable()
export class RunsRepository {
  constructor(@InjectRepository(Run) private readonly runs: Repository<Run>) {}

  /** Records a new running run; a runId that exists already (any owner) is RUN_ALREADY_EXISTS. */
  async create(run: NewRun): Promise<void> {
    try {
      await this.runs.query(
        `INSERT INTO runs (id, thread_id, resource_id, agent_id, status) VALUES ($1, $2, $3, $4, 'running')`,
        [run.id, run.threadId, run.resourceId, run.agentId],
      );
    } catch (err) {
      if (
        err instanceof QueryFailedError &&
        (err.driverError as { code?: string })?.code === UNIQUE_VIOLATION
      ) {
        throw new DomainError('RUN_ALREADY_EXISTS', `Run '${run.id}' already exists`);
      }
      throw err;
    }
  }

  /** Records how a run ended. Only a run still in progress is changed. */
  async finish(id: string, resourceId: string, end: RunEnd): Promise<void> {
    await this.runs.query(
      `WITH ended AS (
         UPDATE runs SET status = $3, error_code = $4, error_message = $5, finished_at = now(), updated_at = now()
          WHERE id = $1 AND resource_id = $2 AND status IN ('running', 'waiting_for_tool') RETURNING id)
       UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM ended) AND status <> 'done'`,
      [id, resourceId, end.status, end.code ?? null, end.message ?? null],
    );
  }

  findOne(id: string, resourceId: string): Promise<Run | null> {
    return this.runs.findOneBy({ id, resourceId });
  }
}
