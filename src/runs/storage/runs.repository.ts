import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { ANY_OWNER, OwnerScope } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { isUniqueViolation } from '../../database/database-errors';
import { LeaseConnection } from '../../database/lease-connection';
import type { Placed } from '../../threads/mastra-rows';
import { StoredMessage } from '../../threads/message-format';
import type { TokenUsage } from '../../protocol/usage';
import { ACTIVE, Run, RunStatus, unindexed } from './run.entity';

/**
 * What a checkpoint writes of a run: `messages`, what it showed (placed into its thread's rows); `progress`, the messages up to its
 * last completed step, with the tokens spent up to it (`usage`, `tokens`: its record and its owner's
 * budget count them even if no replica can end it).
 */
export type SavedCheckpoint = {
  messages?: Placed;
  progress?: StoredMessage[];
  usage?: TokenUsage[];
  tokens?: number;
};

/** The columns of a checkpoint as `jsonb_to_recordset` reads them (SavedCheckpoint, with the run's id, owner and attempt). */
export const CHECKPOINT_RECORD = `c(id text, "resourceId" text, attempt int, messages jsonb, progress jsonb, usage jsonb, tokens bigint)`;

/** The columns a checkpoint sets (`c` is its CHECKPOINT_RECORD). */
export const CHECKPOINT_COLUMNS = `checkpoint = COALESCE(c.messages, runs.checkpoint), progress = COALESCE(c.progress, runs.progress),
                usage = COALESCE(c.usage, runs.usage), tokens = COALESCE(c.tokens, runs.tokens)`;

export type RunEnd = {
  status: Extract<RunStatus, 'finished' | 'error' | 'cancelled'>;
  code?: string;
  message?: string;
  /** The tokens the run's model calls reported. */
  usage?: TokenUsage[];
};

/** A run this instance holds, with its owner: what lease renewals and checkpoints write. */
export type HeldRun = {
  id: string;
  resourceId: string;
  /** Which claim of the run this replica holds: a run another replica claimed since is not its any more. */
  attempt: number;
};

/**
 * The `runs` table. Every method scopes its SQL by the owner: a resourceId, or an OwnerScope where a
 * route reaches a run by its id alone; lease renewals and checkpoints by each held run's own. A
 * run's claim, end and reaping write threads and messages too: ConversationStore.
 */
@Injectable()
export class RunsRepository {
  constructor(
    @InjectRepository(Run) private readonly runs: Repository<Run>,
    /** Renewals and checkpoints go through a connection of their own: they never queue behind the pool. */
    private readonly leases: LeaseConnection,
  ) {}

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
   * The `ordinal`-th run of a stored thread (counted from 1, in the order they started): the runs a
   * thread's stream numbers. Stateless runs that only share the thread's id are not the thread's.
   */
  async nthOfThread(threadId: string, resourceId: string, ordinal: number): Promise<Run | null> {
    const [run] = await this.runs.find({
      where: { threadId, resourceId, stateless: false },
      order: { startedAt: 'ASC', id: 'ASC' },
      skip: ordinal - 1,
      take: 1,
    });
    return run ?? null;
  }

  /** How many runs a stored thread has had, and whether its latest is still active. */
  async latestOfThread(threadId: string, resourceId: string): Promise<{ count: number; active: boolean }> {
    const rows: Array<{ count: number; active: boolean }> = await this.runs.query(
      `SELECT count(*) OVER ()::int AS count, ${ACTIVE} AS active FROM runs
        WHERE thread_id = $1 AND resource_id = $2 AND NOT stateless
        ORDER BY started_at DESC, id DESC LIMIT 1`,
      [threadId, resourceId],
    );
    return rows[0] ?? { count: 0, active: false };
  }

  /**
   * Extends the leases of the runs this instance holds; returns those still active. A run missing
   * from the answer was ended elsewhere (its lease lapsed and another instance reaped it).
   */
  async renewLeases(held: HeldRun[], leaseMs: number): Promise<string[]> {
    if (!held.length) return [];
    const rows = await this.leases.query<{ id: string }>(
      `WITH renewed AS (
         UPDATE runs SET lease_expires_at = now() + $3 * interval '1 millisecond'
           FROM unnest($1::text[], $2::text[], $4::int[]) AS held(id, resource_id, attempt)
          WHERE runs.id = held.id
            AND ${unindexed(`runs.resource_id = held.resource_id AND runs.attempt = held.attempt AND runs.${ACTIVE}`)}
          RETURNING runs.id)
       SELECT id FROM renewed`,
      [held.map((r) => r.id), held.map((r) => r.resourceId), leaseMs, held.map((r) => r.attempt)],
    );
    return rows.map((r) => r.id);
  }

  /**
   * The claim `attempt` of the run was taken over while its replica was alive (a pause, a starved
   * event loop: its lease lapsed, its writes were refused after): that claim is no lost replica, so
   * it does not count against RUN_MAX_ATTEMPTS, as a hand-over does not. Only the claim right after
   * it is given back; by id alone, as the log that learned it knows no owner (the run's id is
   * unique across owners, and only the attempt count changes).
   */
  async giveBackAttempt(runId: string, attempt: number): Promise<void> {
    await this.runs.query(
      `UPDATE runs SET handovers = handovers + 1
        WHERE id = $1 AND ${unindexed(`attempt = $2 + 1 AND ${ACTIVE}`)}`,
      [runId, attempt],
    );
  }

  /** A call made for the run after its end (the thread's title): the run's usage, and the tokens its budget counts, grow. */
  async addUsage(runId: string, resourceId: string, usage: TokenUsage[], tokens: number): Promise<void> {
    await this.runs.query(
      `UPDATE runs SET usage = $3::jsonb, tokens = tokens + $4 WHERE id = $1 AND ${unindexed('resource_id = $2')}`,
      [runId, resourceId, JSON.stringify(usage), tokens],
    );
  }

  /**
   * Takes over an ended run whose log lacks its terminal event, to end that log (its replica died
   * between the two, or is too slow to write it): the claim after `attempt`, so a late write of that
   * replica is refused and every reader gets the one end stored. Undefined when another claim came
   * first (someone else ends the log).
   */
  async takeOverEnded(runId: string, attempt: number): Promise<number | undefined> {
    const rows: Array<{ attempt: number }> = await this.runs.query(
      `WITH taken AS (
         UPDATE runs SET attempt = attempt + 1
          WHERE id = $1 AND ${unindexed(`attempt = $2 AND NOT ${ACTIVE}`)} RETURNING attempt)
       SELECT attempt FROM taken`,
      [runId, attempt],
    );
    return rows[0]?.attempt;
  }

  /**
   * Records what each run has shown so far (its messages) and, when a step completed since, the
   * messages up to it and its usage (its progress: another replica continues from there), renewing its lease in the same write;
   * returns the runs still active, as `renewLeases` does.
   */
  async saveCheckpoints(checkpoints: Array<HeldRun & SavedCheckpoint>, leaseMs: number): Promise<string[]> {
    const rows = await this.leases.query<{ id: string }>(
      `WITH saved AS (
         UPDATE runs SET ${CHECKPOINT_COLUMNS}, lease_expires_at = now() + $2 * interval '1 millisecond'
           FROM jsonb_to_recordset($1::jsonb) AS ${CHECKPOINT_RECORD}
          WHERE runs.id = c.id
            AND ${unindexed(`runs.resource_id = c."resourceId" AND runs.attempt = c.attempt AND runs.${ACTIVE}`)}
          RETURNING runs.id)
       SELECT id FROM saved`,
      [JSON.stringify(checkpoints), leaseMs],
    );
    return rows.map((r) => r.id);
  }
}
