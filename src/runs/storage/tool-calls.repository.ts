import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ToolResult } from '../../agents/tools/run-tools';
import { OwnerScope, ownerParam } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { isActiveStatus, unindexed } from './run.entity';

export type { ToolResult };

/**
 * Unclaimed early results one live run may hold: posts for ids the run never registers would
 * otherwise store results without bound (concurrent posts may pass it by the posts in flight).
 */
export const EARLY_RESULTS_PER_RUN = 32;

/**
 * The `run_tool_calls` table: frontend tool calls and their posted results. Every method takes the
 * run's owner and scopes each of its statements by it through the run: the run's own resourceId for
 * the run's own steps (register, take, abandon, pending), an OwnerScope, which may be any owner (see
 * `idScope`), for a post that reaches the run by its id (submit, registration, withdrawEarly). Another owner's
 * calls are neither read nor written. A call's statements also move its run between `running` and
 * `waiting_for_tool`, in the same statement, so the run's status always matches its calls. A row is
 * `pending` (registered, no result), `early` (result posted before the run registered the call),
 * `submitted` (both), then `done` (taken, abandoned, or the run ended). Registration and a post both
 * insert with ON CONFLICT on (run_id, tool_call_id), so whichever comes second completes the row.
 * (Statements that return rows end in a SELECT: TypeORM returns `[rows, count]` for a bare UPDATE.)
 */
@Injectable()
export class ToolCallsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * A frontend call the run will wait on; the run shows `waiting_for_tool` from now on, unless its
   * result was posted early, which this claims for the run to take.
   */
  async register(runId: string, resourceId: string, toolCallId: string, toolName: string): Promise<void> {
    await this.db.query(
      `WITH call AS (
         INSERT INTO run_tool_calls (run_id, tool_call_id, tool_name)
         SELECT id, $2, $3 FROM runs WHERE id = $1 AND ${unindexed('resource_id = $4')}
         ON CONFLICT (run_id, tool_call_id) DO UPDATE SET status = 'submitted', tool_name = EXCLUDED.tool_name
          WHERE run_tool_calls.status = 'early'
         RETURNING run_id, status)
       UPDATE runs SET status = 'waiting_for_tool', updated_at = now()
        WHERE id = (SELECT run_id FROM call WHERE status = 'pending') AND ${unindexed(`resource_id = $4 AND status = 'running'`)}`,
      [runId, toolCallId, toolName, resourceId],
    );
  }

  /**
   * Stores a posted result and notifies every replica, in one transaction. 404 for an unknown run
   * (or another owner's), 409 RUN_NOT_ACTIVE for an ended run, 409 TOOL_RESULT_ALREADY_SUBMITTED for
   * a second result. A call the run has not registered yet gets its result kept as `early`, up to
   * EARLY_RESULTS_PER_RUN per run (404 past it, as for an unknown call): `early` is returned, and
   * the caller confirms it with {@link registration}. `woke`: the run was parked waiting for
   * it; its lease lapsed, for the caller's replica to continue it.
   */
  async submit(
    runId: string,
    owner: OwnerScope,
    toolCallId: string,
    result: ToolResult,
  ): Promise<'submitted' | 'early' | 'woke'> {
    const resourceId = ownerParam(owner);
    return this.db.transaction(async (tx) => {
      const runs: Array<{ status: string; parked: boolean }> = await tx.query(
        'SELECT status, parked IS NOT NULL AS parked FROM runs WHERE id = $1 AND ($2::text IS NULL OR resource_id = $2)',
        [runId, resourceId],
      );
      if (!runs.length) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
      if (!isActiveStatus(runs[0].status)) {
        throw new DomainError('RUN_NOT_ACTIVE', `Run '${runId}' is not active`);
      }
      // One upsert, not an UPDATE then a SELECT: it waits for a registration in flight instead of missing it.
      const stored: Array<{ status: string }> = await tx.query(
        `INSERT INTO run_tool_calls (run_id, tool_call_id, status, result, error, submitted_at)
         SELECT id, $2, 'early', $3::jsonb, $4, now() FROM runs WHERE id = $1 AND ($5::text IS NULL OR resource_id = $5)
         ON CONFLICT (run_id, tool_call_id) DO UPDATE
           SET status = 'submitted', result = EXCLUDED.result, error = EXCLUDED.error, submitted_at = now()
          WHERE run_tool_calls.status = 'pending'
         RETURNING status`,
        [
          runId,
          toolCallId,
          result.error === undefined ? JSON.stringify(result.content ?? null) : null,
          result.error ?? null,
          resourceId,
        ],
      );
      if (!stored.length) {
        throw new DomainError(
          'TOOL_RESULT_ALREADY_SUBMITTED',
          `A result for '${toolCallId}' was already submitted`,
        );
      }
      if (stored[0].status === 'early') {
        const [{ early }]: Array<{ early: number }> = await tx.query(
          `SELECT count(*)::int AS early FROM run_tool_calls c JOIN runs r ON r.id = c.run_id
            WHERE c.run_id = $1 AND c.status = 'early' AND ($2::text IS NULL OR r.resource_id = $2)`,
          [runId, resourceId],
        );
        if (early > EARLY_RESULTS_PER_RUN) {
          throw new DomainError('NOT_FOUND', `Tool call '${toolCallId}' not found in run '${runId}'`);
        }
      }
      await tx.query(`SELECT pg_notify('io_bridge_tool_result', $1)`, [`${runId} ${toolCallId}`]);
      // A parked run waits for this: its lease lapses now, for this replica to continue it (the caller reaps).
      if (runs[0].parked) {
        const woken: unknown[] = await tx.query(
          `UPDATE runs SET lease_expires_at = now() - interval '1 millisecond' WHERE id = $1 AND parked = $2 RETURNING id`,
          [runId, toolCallId],
        );
        if (woken.length) return 'woke';
      }
      return stored[0].status === 'early' ? 'early' : 'submitted';
    });
  }

  /** Whether the run registered the call a result was posted for (`early`: not yet; `none`: withdrawn, or never). */
  async registration(
    runId: string,
    owner: OwnerScope,
    toolCallId: string,
  ): Promise<'early' | 'registered' | 'none'> {
    const rows: Array<{ status: string }> = await this.db.query(
      `SELECT c.status FROM run_tool_calls c JOIN runs r ON r.id = c.run_id
        WHERE c.run_id = $1 AND c.tool_call_id = $2 AND ($3::text IS NULL OR r.resource_id = $3)`,
      [runId, toolCallId, ownerParam(owner)],
    );
    if (!rows.length) return 'none';
    return rows[0].status === 'early' ? 'early' : 'registered';
  }

  /** Withdraws a result still early (its call was never registered); false when the run registered it meanwhile. */
  async withdrawEarly(runId: string, owner: OwnerScope, toolCallId: string): Promise<boolean> {
    const withdrawn: unknown[] = await this.db.query(
      `WITH withdrawn AS (
         DELETE FROM run_tool_calls c USING runs r
          WHERE c.run_id = $1 AND c.tool_call_id = $2 AND c.status = 'early' AND r.id = c.run_id
            AND ($3::text IS NULL OR r.resource_id = $3)
          RETURNING 1)
       SELECT * FROM withdrawn`,
      [runId, toolCallId, ownerParam(owner)],
    );
    return withdrawn.length > 0;
  }

  /**
   * Takes a posted result, once: registered or still early (the run may wait on a call before its
   * registration lands). The run goes back to `running` when nothing else is pending.
   */
  async take(runId: string, resourceId: string, toolCallId: string): Promise<ToolResult | undefined> {
    const rows: Array<{ result: unknown; error: string | null }> = await this.db.query(
      `WITH taken AS (
         UPDATE run_tool_calls c SET status = 'done'
           FROM runs r
          WHERE c.run_id = $1 AND c.tool_call_id = $2 AND c.status IN ('submitted', 'early')
            AND r.id = c.run_id AND r.resource_id = $3
          RETURNING c.result, c.error)
       SELECT * FROM taken`,
      [runId, toolCallId, resourceId],
    );
    if (!rows.length) return undefined;
    await this.resumeIfIdle(runId, resourceId);
    const [row] = rows;
    return row.error !== null ? { error: row.error } : { content: row.result };
  }

  /** A call the run no longer waits on (its arguments failed validation): a result posted for it is dropped. */
  async abandon(runId: string, resourceId: string, toolCallId: string): Promise<void> {
    await this.db.query(
      `UPDATE run_tool_calls c SET status = 'done'
         FROM runs r
        WHERE c.run_id = $1 AND c.tool_call_id = $2 AND c.status <> 'done' AND r.id = c.run_id AND r.resource_id = $3`,
      [runId, toolCallId, resourceId],
    );
    await this.resumeIfIdle(runId, resourceId);
  }

  /** Calls the run waits on; early results are not calls of the run until it registers them. */
  async pending(runId: string, resourceId: string): Promise<Array<{ toolCallId: string; toolName: string }>> {
    return this.db.query(
      `SELECT c.tool_call_id AS "toolCallId", c.tool_name AS "toolName"
         FROM run_tool_calls c JOIN runs r ON r.id = c.run_id AND r.resource_id = $2
        WHERE c.run_id = $1 AND c.status = 'pending' ORDER BY c.created_at, c.tool_call_id`,
      [runId, resourceId],
    );
  }

  private async resumeIfIdle(runId: string, resourceId: string): Promise<void> {
    await this.db.query(
      `UPDATE runs SET status = 'running', updated_at = now()
        WHERE id = $1 AND ${unindexed(`resource_id = $2 AND status = 'waiting_for_tool'`)}
          AND NOT EXISTS (SELECT 1 FROM run_tool_calls WHERE run_id = runs.id AND status = 'pending')`,
      [runId, resourceId],
    );
  }
}
