import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../../common/errors';
import { APPROVAL_RESPONSE_SCHEMA, approves, Interrupt, ResumeEntry } from '../../protocol/outcomes';

/** A tool call a run stopped at for a person's approval. */
export type ApprovalRequest = { toolCallId: string; toolName: string; args: unknown; messageId?: string };

/** An interrupt as a resuming run finds it, with the answer `resume` gives. */
export type AnsweredInterrupt = ApprovalRequest & {
  id: string;
  runId: string;
  approved: boolean;
  reason?: string;
};

/** What `GET /runs/:runId` shows of a run's interrupts: those unanswered, and the answers given. */
export type RunInterrupts = {
  interrupts: Interrupt[];
  approvals: Array<{ toolCallId: string; toolName: string; approved: boolean; by: string; at: string }>;
};

type Row = {
  id: string;
  run_id: string;
  thread_id: string;
  tool_call_id: string;
  tool_name: string;
  args: unknown;
  message_id: string | null;
  expires_at: Date;
  expired: boolean;
  approved: boolean | null;
  answered_by: string | null;
  answered_at: Date | null;
};

const toInterrupt = (
  r: Pick<Row, 'id' | 'tool_call_id' | 'tool_name' | 'args' | 'expires_at'>,
): Interrupt => ({
  id: r.id,
  reason: 'tool_approval',
  toolCallId: r.tool_call_id,
  message: `Approve the call of ${r.tool_name} with ${JSON.stringify(r.args)}?`,
  expiresAt: r.expires_at.toISOString(),
  responseSchema: APPROVAL_RESPONSE_SCHEMA,
});

/** An interrupt with the answer a `resume` entry gives it. */
function answerOf(row: Row, entry: ResumeEntry): AnsweredInterrupt {
  const reason = (entry.payload as { reason?: unknown } | undefined)?.reason;
  return {
    id: row.id,
    runId: row.run_id,
    toolCallId: row.tool_call_id,
    toolName: row.tool_name,
    args: row.args,
    ...(row.message_id ? { messageId: row.message_id } : {}),
    approved: approves(entry),
    ...(typeof reason === 'string' ? { reason: reason.slice(0, 1000) } : {}),
  };
}

/**
 * The `run_interrupts` table (AG-UI 1.0 interrupts for approvals): written by the run that stops at
 * a call needing approval, answered by a later run's `resume` on any replica, kept as the audit of
 * who answered. Every statement is scoped by the owner.
 */
@Injectable()
export class InterruptsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records the run's approval requests; returns them as AG-UI interrupts. */
  async create(
    run: { runId: string; threadId: string; resourceId: string },
    requests: ApprovalRequest[],
    ttlMs: number,
  ): Promise<Interrupt[]> {
    const rows: Row[] = await this.db.query(
      `INSERT INTO run_interrupts (id, run_id, thread_id, resource_id, tool_call_id, tool_name, args, message_id, expires_at)
       SELECT gen_random_uuid()::text, $1, $2, $3, r.tool_call_id, r.tool_name, r.args, r.message_id,
              now() + $5 * interval '1 millisecond'
         FROM jsonb_to_recordset($4::jsonb) AS r(tool_call_id text, tool_name text, args jsonb, message_id text)
       ON CONFLICT (run_id, tool_call_id) DO NOTHING
       RETURNING id, tool_call_id, tool_name, args, expires_at`,
      [
        run.runId,
        run.threadId,
        run.resourceId,
        JSON.stringify(
          requests.map((r) => ({
            tool_call_id: r.toolCallId,
            tool_name: r.toolName,
            args: r.args ?? {},
            message_id: r.messageId ?? null,
          })),
        ),
        ttlMs,
      ],
    );
    return rows.map(toInterrupt);
  }

  /**
   * The interrupts `resume` answers, checked before the run is claimed: each must be an unanswered,
   * unexpired interrupt of the owner on this thread (404 unknown, 409 answered, 410 expired).
   */
  async check(entries: ResumeEntry[], resourceId: string, threadId: string): Promise<AnsweredInterrupt[]> {
    const rows: Row[] = await this.db.query(
      `SELECT id, run_id, thread_id, tool_call_id, tool_name, args, message_id, expires_at,
              expires_at <= now() AS expired, approved, answered_by, answered_at
         FROM run_interrupts WHERE id = ANY($1::text[]) AND resource_id = $2`,
      [entries.map((e) => e.interruptId), resourceId],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return entries.map((entry, i) => {
      const row = byId.get(entry.interruptId);
      const path = [{ path: `resume.${i}.interruptId`, message: entry.interruptId }];
      if (!row || row.thread_id !== threadId)
        throw new DomainError('NOT_FOUND', `Interrupt '${entry.interruptId}' not found on this thread`, path);
      if (row.answered_at)
        throw new DomainError(
          'INTERRUPT_ALREADY_RESOLVED',
          `Interrupt '${entry.interruptId}' was answered already`,
          path,
        );
      if (row.expired)
        throw new DomainError('INTERRUPT_EXPIRED', `Interrupt '${entry.interruptId}' has expired`, path);
      return answerOf(row, entry);
    });
  }

  /**
   * The interrupts run `runId` answered with its `resume` (`entries`), as check() gave them: a
   * continuation of the run (on another replica) carries them on.
   */
  async answeredIn(runId: string, resourceId: string, entries: ResumeEntry[]): Promise<AnsweredInterrupt[]> {
    const rows: Row[] = await this.db.query(
      `SELECT id, run_id, thread_id, tool_call_id, tool_name, args, message_id, expires_at, false AS expired,
              approved, answered_by, answered_at
         FROM run_interrupts WHERE answered_in = $1 AND resource_id = $2`,
      [runId, resourceId],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return entries.flatMap((entry) => {
      const row = byId.get(entry.interruptId);
      return row ? [answerOf(row, entry)] : [];
    });
  }

  /**
   * Records the answers, by whom, in the resuming run; false when another run answered one of them
   * meanwhile (the row lock makes the later one see it answered) or it expired.
   */
  async answer(
    answers: AnsweredInterrupt[],
    resourceId: string,
    by: string,
    runId: string,
  ): Promise<boolean> {
    const rows: Array<{ id: string }> = await this.db.query(
      `WITH answered AS (
         UPDATE run_interrupts i SET approved = a.approved, answered_by = $3, answered_at = now(), answered_in = $4
           FROM jsonb_to_recordset($1::jsonb) AS a(id text, approved boolean)
          WHERE i.id = a.id AND i.resource_id = $2 AND i.answered_at IS NULL AND i.expires_at > now()
         RETURNING i.id)
       SELECT id FROM answered`,
      [JSON.stringify(answers.map((a) => ({ id: a.id, approved: a.approved }))), resourceId, by, runId],
    );
    return rows.length === answers.length;
  }

  /** A run's interrupts for its view: those still open (unexpired), and the answers given to it. */
  async ofRun(runId: string, resourceId: string | null): Promise<RunInterrupts> {
    const rows: Row[] = await this.db.query(
      `SELECT id, tool_call_id, tool_name, args, expires_at, expires_at <= now() AS expired, approved,
              answered_by, answered_at
         FROM run_interrupts WHERE run_id = $1 AND ($2::text IS NULL OR resource_id = $2) ORDER BY created_at, id`,
      [runId, resourceId],
    );
    return {
      interrupts: rows.filter((r) => !r.answered_at && !r.expired).map(toInterrupt),
      approvals: rows
        .filter((r) => r.answered_at)
        .map((r) => ({
          toolCallId: r.tool_call_id,
          toolName: r.tool_name,
          approved: r.approved === true,
          by: r.answered_by ?? '',
          at: r.answered_at!.toISOString(),
        })),
    };
  }
}
