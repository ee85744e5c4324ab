import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { MastraRow } from '../../threads/mastra-format';
import { messagesOf } from '../../threads/mastra-rows';
import { MESSAGE_ROW_COLUMNS } from '../../threads/messages.repository';
import { StoredMessage } from '../../threads/message-format';
import { clockAfter, dropAnswerCopies, storePlacedRows } from '../../threads/store-rows';
import { spentSoFar, TokenUsage } from '../../protocol/usage';
import { ACTIVE, unindexed } from './run.entity';
import { RunEventsRepository } from './run-events.repository';
import { endOrphanedLog } from './orphaned-log';
import { CHECKPOINT_COLUMNS, CHECKPOINT_RECORD, SavedCheckpoint } from './runs.repository';

/** Runs were handed over (a replica drains): the others reap at once instead of at their interval. */
export const HANDED_OVER_CHANNEL = 'io_bridge_runs_handed_over';

/** A run handed over, with what its last checkpoint holds (LeaseHolder.checkpoint). */
export type HandedOverRun = SavedCheckpoint & {
  id: string;
  resourceId: string;
  attempt: number;
  /** Everything it showed, closed or not, and all it spent (a parked run goes on from there). */
  shown?: StoredMessage[];
  shownUsage?: TokenUsage[];
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
  input: {
    request: Record<string, unknown>;
    principal: { resourceId: string; admin: boolean };
    /** The owner's token budget as the run's claim found it. */
    budget?: { tokens: number; spent: number };
  };
  progress: StoredMessage[] | null;
  /** The tokens its completed steps spent (they count again in its end). */
  usage: TokenUsage[] | null;
  attempt: number;
  /** It was parked waiting for this tool call's result. */
  parked: string | null;
};

/** A lapsed run the reap ended INTERRUPTED: its log is ended at once, by the claim the end took. */
type EndedRun = { id: string; threadId: string; attempt: number };

export type Reaped = { ended: string[]; continued: LapsedRun[]; nextLapseMs?: number };

/** How the reaper records a run it ends: what its log's RUN_ERROR says. */
const LAPSED_END = { code: 'INTERRUPTED', message: 'The instance running it stopped' } as const;

/**
 * Runs whose lease lapsed: claimed to be continued here, or ended INTERRUPTED when they cannot be;
 * and runs this replica hands over (drain). Each one statement.
 */
@Injectable()
export class LapsedRunsRepository {
  private readonly maxAttempts: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly events: RunEventsRepository,
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
   * marked interrupted; a stateless run keeps nothing. Ending a run takes it over too (its attempt
   * counted), so the replica that lost it can write nothing more to it, and its log is ended here at
   * once (what was open closed, then RUN_ERROR INTERRUPTED): its readers learn the end now. Also
   * says when the next lease lapses.
   */
  async reapLapsed(reap: ReapLapsed): Promise<Reaped> {
    const rows: Array<{ kind: 'e' | 'c' | 'n'; body: unknown }> = await this.db.query(
      `WITH continued AS (
         UPDATE runs SET attempt = attempt + 1, lease_expires_at = now() + $4 * interval '1 millisecond', parked = NULL
           FROM (SELECT id AS lapsed_id, parked AS was_parked FROM runs
                  WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
                    AND $3::boolean AND attempt - handovers < $2 AND input IS NOT NULL
                    FOR UPDATE SKIP LOCKED) AS lapsed_run
          WHERE runs.id = lapsed_run.lapsed_id
          RETURNING id, thread_id, resource_id, stateless, input, progress, usage, attempt, was_parked),
       lapsed AS (
         UPDATE runs SET status = 'error', error_code = $5, input = NULL, progress = NULL, attempt = attempt + 1,
                error_message = $6, finished_at = now(), updated_at = now()
          WHERE ${ACTIVE} AND lease_expires_at < now() AND ($1::text IS NULL OR thread_id = $1)
            AND (attempt - handovers >= $2 OR input IS NULL)
          RETURNING id, thread_id, resource_id, checkpoint, stateless, attempt, started_at),
       closed AS (
         UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM lapsed) AND status <> 'done'),
       owned AS (
         SELECT l.id, l.thread_id, l.resource_id, l.checkpoint FROM lapsed l
           JOIN mastra_threads t ON t.id = l.thread_id AND t."resourceId" = l.resource_id
          WHERE jsonb_typeof(l.checkpoint) = 'object' AND NOT l.stateless
            FOR UPDATE OF t),
       clock AS (
         UPDATE mastra_threads t
            SET io_bridge_last_message_at = ${clockAfter('t.io_bridge_last_message_at', "(o.checkpoint->>'slots')::int")},
                "updatedAt" = now() AT TIME ZONE 'UTC', "updatedAtZ" = now()
           FROM owned o WHERE t.id = o.thread_id
          RETURNING t.id, t.io_bridge_last_message_at AS last),
       src AS (
         SELECT o.thread_id, o.resource_id, o.checkpoint AS placed, c.last, true AS write
           FROM owned o JOIN clock c ON c.id = o.thread_id),
       ${storePlacedRows('src', 'p_')},
       runs_ended AS (
         SELECT l.thread_id, l.started_at AS since, NULL::timestamptz AS until FROM lapsed l
           JOIN mastra_threads t ON t.id = l.thread_id AND t."resourceId" = l.resource_id
          WHERE NOT l.stateless),
       ${dropAnswerCopies('runs_ended', 'c_')}
       SELECT 'e' AS kind, jsonb_build_object('id', id, 'threadId', thread_id, 'attempt', attempt) AS body FROM lapsed
       UNION ALL SELECT 'c', jsonb_build_object('id', id, 'threadId', thread_id, 'resourceId', resource_id,
                'stateless', stateless, 'input', input, 'progress', progress, 'usage', usage, 'attempt', attempt,
                'parked', was_parked) FROM continued
       UNION ALL SELECT 'n', to_jsonb(ceil(extract(epoch FROM (min(lease_expires_at) - now())) * 1000))
         FROM runs WHERE ${ACTIVE} AND lease_expires_at >= now()`,
      [
        reap.threadId ?? null,
        this.maxAttempts,
        reap.continue,
        reap.leaseMs,
        LAPSED_END.code,
        LAPSED_END.message,
      ],
    );
    const next = rows.find((r) => r.kind === 'n')?.body;
    const ended = rows.filter((r) => r.kind === 'e').map((r) => r.body as EndedRun);
    await this.endLogs(ended);
    return {
      ended: ended.map((r) => r.id),
      continued: rows.filter((r) => r.kind === 'c').map((r) => r.body as LapsedRun),
      ...(typeof next === 'number' ? { nextLapseMs: next } : {}),
    };
  }

  /**
   * Ends the logs of runs this reap ended (their readers get the end at once). One that cannot be
   * ended now is ended by its first follower that finds its end recorded (StoredStreams).
   */
  private async endLogs(ended: EndedRun[]): Promise<void> {
    for (const run of ended) {
      await endOrphanedLog(
        { ...run, status: 'error', errorCode: LAPSED_END.code, errorMessage: LAPSED_END.message },
        this.events,
      ).catch(() => undefined);
    }
  }

  /**
   * Hands runs of this replica over (it drains): their last checkpoints written, their leases lapsed
   * now, their attempt not counted (a hand-over is no lost replica), and the other replicas told
   * (HANDED_OVER_CHANNEL) so that one claims them at once. Returns the ids handed over.
   */
  async handOver(runs: HandedOverRun[]): Promise<string[]> {
    if (!runs.length) return [];
    const rows: Array<{ id: string }> = await this.db.query(
      `WITH handed AS (
         UPDATE runs SET lease_expires_at = now() - interval '1 millisecond', handovers = handovers + 1,
                ${CHECKPOINT_COLUMNS}
           FROM jsonb_to_recordset($1::jsonb) AS ${CHECKPOINT_RECORD}
          WHERE runs.id = c.id AND ${unindexed(`runs.resource_id = c."resourceId" AND runs.attempt = c.attempt AND runs.${ACTIVE}`)}
          RETURNING runs.id),
       told AS (SELECT pg_notify('${HANDED_OVER_CHANNEL}', count(*)::text) FROM handed HAVING count(*) > 0)
       SELECT id FROM handed, (SELECT count(*) FROM told) AS sent`,
      [JSON.stringify(runs)],
    );
    return rows.map((r) => r.id);
  }

  /**
   * Parks a run that waits for `toolCallId` (its engine stopped here): what it showed is its
   * progress, its lease runs until the tool's timeout (then a replica ends it TOOL_RESULT_TIMEOUT),
   * and a posted result lapses it (ToolCallsRepository.submit). Not a lost attempt.
   */
  async park(run: HandedOverRun, toolCallId: string, remainingMs: number): Promise<boolean> {
    const spent = spentSoFar(run.shownUsage);
    const rows: unknown[] = await this.db.query(
      `UPDATE runs SET parked = $4, handovers = handovers + 1, lease_expires_at = now() + $5 * interval '1 millisecond',
              checkpoint = COALESCE($6::jsonb, checkpoint), progress = $7::jsonb,
              usage = COALESCE($8::jsonb, usage), tokens = COALESCE($9, tokens)
        WHERE id = $1 AND ${unindexed(`resource_id = $2 AND attempt = $3 AND ${ACTIVE}`)} RETURNING id`,
      [
        run.id,
        run.resourceId,
        run.attempt,
        toolCallId,
        remainingMs,
        run.messages ? JSON.stringify(run.messages) : null,
        JSON.stringify(run.shown ?? []),
        spent.usage ? JSON.stringify(spent.usage) : null,
        spent.tokens ?? null,
      ],
    );
    return rows.length > 0;
  }

  /** The messages of the last `lastMessages` rows of the owner's thread, in order: the history a continued run starts from. */
  async history(threadId: string, resourceId: string, lastMessages: number): Promise<StoredMessage[]> {
    const rows: MastraRow[] = await this.db.query(
      `SELECT id, role, content, "createdAt" FROM (
         SELECT ${MESSAGE_ROW_COLUMNS}, m."createdAt" AS created
           FROM mastra_messages m JOIN mastra_threads t ON t.id = m.thread_id AND t."resourceId" = $2
          WHERE m.thread_id = $1
          ORDER BY m."createdAt" DESC, m.id DESC LIMIT $3) AS h
        ORDER BY created, id`,
      [threadId, resourceId, lastMessages],
    );
    return rows.flatMap(messagesOf);
  }
}
