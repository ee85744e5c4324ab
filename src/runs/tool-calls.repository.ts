import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ToolResult } from '../agents/tools/run-tools';
import { DomainError } from '../common/errors';

export type { ToolResult };

/**
 * Frontend tool calls and their posted results; a client's post is scoped by the run's owner.
 * (Statements that return rows end in a SELECT: TypeORM returns `[rows, count]` for a bare UPDATE.)
 */
@Injectable()
export class ToolCallsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A frontend call the run will wait on; the run shows `waiting_for_tool` from now on. */
  async register(runId: string, toolCallId: string, toolName: string): Promise<void> {
    await this.db.query(
      `WITH call AS (
         INSERT INTO run_tool_calls (run_id, tool_call_id, tool_name) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING RETURNING run_id)
       UPDATE runs SET status = 'waiting_for_tool', updated_at = now()
        WHERE id = (SELECT run_id FROM call) AND status = 'running'`,
      [runId, toolCallId, toolName],
    );
  }

  /**
   * Stores a posted result and notifies every replica, in one transaction. 404 for an unknown run
   * (or another owner's) or tool call, 409 RUN_NOT_ACTIVE for an ended run, 409
   * TOOL_RESULT_ALREADY_SUBMITTED for a second result.
   */
  async submit(runId: string, resourceId: string, toolCallId: string, result: ToolResult): Promise<void> {
    await this.db.transaction(async (tx) => {
      const runs: Array<{ status: string }> = await tx.query(
        'SELECT status FROM runs WHERE id = $1 AND resource_id = $2',
        [runId, resourceId],
      );
      if (!runs.length) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
      if (runs[0].status !== 'running' && runs[0].status !== 'waiting_for_tool') {
        throw new DomainError('RUN_NOT_ACTIVE', `Run '${runId}' is not active`);
      }
      const updated: unknown[] = await tx.query(
        `WITH updated AS (
           UPDATE run_tool_calls SET status = 'submitted', result = $3::jsonb, error = $4, submitted_at = now()
            WHERE run_id = $1 AND tool_call_id = $2 AND status = 'pending' RETURNING 1)
         SELECT * FROM updated`,
        [
          runId,
          toolCallId,
          result.error === undefined ? JSON.stringify(result.content ?? null) : null,
          result.error ?? null,
        ],
      );
      if (!updated.length) {
        const known: unknown[] = await tx.query(
          'SELECT 1 FROM run_tool_calls WHERE run_id = $1 AND tool_call_id = $2',
          [runId, toolCallId],
        );
        if (known.length) {
          throw new DomainError(
            'TOOL_RESULT_ALREADY_SUBMITTED',
            `A result for '${toolCallId}' was already submitted`,
          );
        }
        throw new DomainError('NOT_FOUND', `Tool call '${toolCallId}' not found in run '${runId}'`);
      }
      await tx.query(`SELECT pg_notify('io_bridge_tool_result', $1)`, [`${runId} ${toolCallId}`]);
    });
  }

  /** Takes a submitted result, once; the run goes back to `running` when nothing else is pending. */
  async take(runId: string, toolCallId: string): Promise<ToolResult | undefined> {
    const rows: Array<{ result: unknown; error: string | null }> = await this.db.query(
      `WITH taken AS (
         UPDATE run_tool_calls SET status = 'done'
          WHERE run_id = $1 AND tool_call_id = $2 AND status = 'submitted' RETURNING result, error)
       SELECT * FROM taken`,
      [runId, toolCallId],
    );
    if (!rows.length) return undefined;
    await this.resumeIfIdle(runId);
    const [row] = rows;
    return row.error !== null ? { error: row.error } : { content: row.result };
  }

  /** A call the run no longer waits on (its arguments failed validation, or the run ended). */
  async abandon(runId: string, toolCallId: string): Promise<void> {
    await this.db.query(
      `UPDATE run_tool_calls SET status = 'done' WHERE run_id = $1 AND tool_call_id = $2 AND status = 'pending'`,
      [runId, toolCallId],
    );
    await this.resumeIfIdle(runId);
  }

  async pending(runId: string): Promise<Array<{ toolCallId: string; toolName: string }>> {
    return this.db.query(
      `SELECT tool_call_id AS "toolCallId", tool_name AS "toolName" FROM run_tool_calls
        WHERE run_id = $1 AND status = 'pending' ORDER BY created_at, tool_call_id`,
      [runId],
    );
  }

  private async resumeIfIdle(runId: string): Promise<void> {
    await this.db.query(
      `UPDATE runs SET status = 'running', updated_at = now()
        WHERE id = $1 AND status = 'waiting_for_tool'
          AND NOT EXISTS (SELECT 1 FROM run_tool_calls WHERE run_id = $1 AND status = 'pending')`,
      [runId],
    );
  }
}
