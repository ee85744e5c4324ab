import { Inject, Injectable } from '@nestjs/common';
import { LapsedRunsRepository } from './lapsed-runs.repository';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../../common/errors';
import { Semaphore } from '../../common/semaphore';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { queryPrepared } from '../../database/prepared';
import { MastraRow } from '../../threads/mastra-format';
import { StoredMessage } from '../../threads/message-format';
import { messagesOf, placeMessages, rowId } from '../../threads/mastra-rows';
import { clockAfter, dropAnswerCopies, runSpans, storePlacedRows } from '../../threads/store-rows';
import { MESSAGE_ROW_COLUMNS, MessagesRepository } from '../../threads/messages.repository';
import { tokensOf } from '../../protocol/usage';
import { frame } from '../events/frames';
import { runStarted } from '../events/run-lifecycle';
import { announcement, Chunk, EVENT_LOG_WRITES, insertChunks, LogTail } from './run-events.repository';
import { ACTIVE, unindexed } from './run.entity';
import { RunEnd, RunsRepository } from './runs.repository';

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
  /**
   * The request names memory (or the operator stores every run): the thread is created when missing.
   * Otherwise the run is stored only when `threadId` is already a thread of the owner (whoever
   * wrote it: docs/protocol.md#where-threads-live).
   */
  memory: boolean;
  /** The configured token budget per owner (TOKEN_BUDGET_PER_OWNER; null: none) and its window, unless the owner has one of its own. */
  budget?: { tokens: number | null; windowMs: number };
  /**
   * What another replica needs to continue the run (its request and owner), kept on the run's row;
   * `request.messages` is left out when the thread stores them.
   */
  input: { request: object; principal: object };
  /** The request's place in the thread's queue (`run_queue`), when it waited: only places before it hold it back. */
  queueTicket?: string;
};

/** An owner's token budget at a claim: its size, and what its ended runs spent in the window. */
export type Budget = { tokens: number; spent: number };

/** A row of the thread's history as the claim reads it (its time as JSON text). */
type HistoryRow = Omit<MastraRow, 'createdAt'> & { createdAt: string };

/**
 * What a claimed run works with: the messages the model sees, whether the run is part of a thread,
 * the owner's budget when there is one, and its log as the claim began it (RUN_STARTED, stored).
 */
export type Claimed = { history: StoredMessage[]; stateless: boolean; budget?: Budget; log: Chunk };

export type EndRun = {
  threadId: string;
  runId: string;
  /** The claim of the run that ends it: one superseded by a later claim elsewhere writes nothing. */
  attempt: number;
  resourceId: string;
  end: RunEnd;
  produced: StoredMessage[];
  /** The events its log has not stored (RunLogWriter.tail): stored with the end, and settled. */
  tail?: LogTail;
};

/**
 * A conversation on the server: the statements of a run's life that write several tables at once
 * (runs, threads and messages in Mastra's memory tables, run_tool_calls), each one statement (one round trip, atomic). They live
 * here, not split over the tables' repositories (RunsRepository, ThreadsRepository,
 * MessagesRepository, ToolCallsRepository), because splitting them would cost round trips and
 * atomicity on every run; every other statement is in the repository of its table.
 * Before the stream: the owner's thread (created by a run that names memory), the run with its
 * lease, the incoming messages not stored yet, and the history the model sees: what can be refused
 * is refused there. Before the terminal event: the run's end and the messages it produced. A
 * stateless run (no memory named, no thread of the owner) is recorded, and nothing else. A run whose
 * instance died is continued elsewhere, or ended (LapsedRunsRepository).
 */
@Injectable()
export class ConversationStore {
  /**
   * Claims in flight at once: the pool less the event log's writes (docs/limits.md#claims). The runs of
   * a burst claimed first start and store their first words while the rest wait their turn.
   */
  private readonly claiming: Semaphore;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @InjectDataSource() private readonly db: DataSource,
    private readonly messages: MessagesRepository,
    private readonly runs: RunsRepository,
    private readonly lapsed: LapsedRunsRepository,
  ) {
    // Claims wait their turn without a limit (the database's timeouts bound each): nothing is refused here.
    this.claiming = new Semaphore(
      Math.max(1, config.database.poolSize - EVENT_LOG_WRITES),
      () => new DomainError('SERVICE_UNAVAILABLE', 'Too many runs are being claimed; retry'),
    );
  }

  /**
   * Claims the run, in one statement (one round trip, one commit): the owner's thread is touched, or
   * created when the run names memory (then another owner's thread is a 404, as if missing; without
   * memory such a thread is as missing and the run is stateless), the run is recorded with its lease
   * (RUN_ALREADY_EXISTS, or THREAD_BUSY unless the busy run's lease lapsed; THREAD_BUSY too while
   * requests wait for the thread before this one, `run_queue`), its log begins with RUN_STARTED
   * (stored here, it goes out with the response's headers: no write of its own), and the incoming
   * messages the thread does not store yet are appended (unless read-only). Returns what the model
   * sees: the stored history (its last `lastMessages`) followed by those new messages; a stateless
   * run sees only its own messages.
   */
  claim(run: ClaimRun): Promise<Claimed> {
    return this.claiming.run(() => this.claimOrReap(run));
  }

  private async claimOrReap(run: ClaimRun): Promise<Claimed> {
    try {
      return await this.claimOnce(run);
    } catch (err) {
      // A run whose instance died holds the thread until its lease lapses: end it, then try once more.
      if (!(err instanceof DomainError && err.code === 'THREAD_BUSY')) throw err;
      if (!(await this.lapsed.endLapsed(run.threadId)).length) throw err;
      return this.claimOnce(run);
    }
  }

  private async claimOnce(run: ClaimRun): Promise<Claimed> {
    const placed = placeMessages(run.threadId, run.incoming);
    const log: Chunk = {
      first: 1,
      last: 1,
      frames: frame(1, runStarted(run.threadId, run.runId)),
      terminal: false,
    };
    let rows: Array<{
      kind: 'q' | 'r' | 'h' | 's' | 'd' | 'b';
      body: HistoryRow | string | boolean | { tokens: string; spent: string; retryMs: number | null };
    }>;
    try {
      rows = await queryPrepared(
        this.db,
        'io-bridge.claim-run',
        `WITH budget AS (
           SELECT COALESCE(q.tokens, $12::bigint) AS tokens,
                  COALESCE(q.window_ms, $13::bigint) * interval '1 millisecond' AS span
             FROM (SELECT 1) AS one LEFT JOIN owner_quotas q ON q.resource_id = $2),
         quota AS (
           SELECT b.tokens, COALESCE(sum(r.tokens), 0) AS spent,
                  -- When the oldest run counted leaves the window: the earliest the budget can free up.
                  ceil(extract(epoch FROM (min(r.finished_at) + b.span - now())) * 1000) AS retry_ms
             FROM budget b LEFT JOIN runs r
               ON r.resource_id = $2 AND r.tokens > 0 AND r.finished_at > now() - b.span
            WHERE b.tokens IS NOT NULL
            GROUP BY b.tokens, b.span),
         over AS (SELECT 1 FROM quota WHERE spent >= tokens),
         -- Requests waiting for the thread (ifBusy) before this one: it does not jump the queue.
         ahead AS (
           SELECT 1 FROM run_queue q LEFT JOIN run_queue mine ON mine.ticket = $14::bigint
            WHERE q.thread_id = $1 AND q.expires_at >= now() AND q.ticket IS DISTINCT FROM $14::bigint
              AND (mine.ticket IS NULL OR q.urgent > mine.urgent OR (q.urgent = mine.urgent AND q.ticket < mine.ticket))
            LIMIT 1),
         thread AS (
           INSERT INTO mastra_threads (id, "resourceId", io_bridge_agent_id, title, metadata, "createdAt", "updatedAt",
                                       "createdAtZ", "updatedAtZ", io_bridge_last_message_at)
           SELECT $1, $2, $3, COALESCE($4, ''), '{}'::jsonb, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now(), now(),
                  ${clockAfter('NULL::timestamptz', '$7::int')}
            WHERE ($11::boolean OR EXISTS (SELECT 1 FROM mastra_threads WHERE id = $1 AND "resourceId" = $2))
              AND NOT EXISTS (SELECT 1 FROM over)
           ON CONFLICT (id) DO UPDATE SET "updatedAt" = now() AT TIME ZONE 'UTC', "updatedAtZ" = now(),
                  title = CASE WHEN mastra_threads.title = '' THEN EXCLUDED.title ELSE mastra_threads.title END,
                  io_bridge_agent_id = COALESCE(mastra_threads.io_bridge_agent_id, EXCLUDED.io_bridge_agent_id),
                  io_bridge_last_message_at = ${clockAfter('mastra_threads.io_bridge_last_message_at', '$7::int')}
             WHERE mastra_threads."resourceId" = EXCLUDED."resourceId"
           RETURNING id, io_bridge_last_message_at AS last),
         run AS (
           INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at, stateless, input)
           SELECT $5, $1, $2, $3, 'running', now() + $6 * interval '1 millisecond', NOT EXISTS (SELECT 1 FROM thread),
                  CASE WHEN EXISTS (SELECT 1 FROM thread) AND NOT $10::boolean
                       THEN $15::jsonb #- '{request,messages}' ELSE $15::jsonb END
                  -- The budget as this claim finds it: a continuation of the run counts against the same.
                  || COALESCE((SELECT jsonb_build_object('budget', jsonb_build_object('tokens', tokens, 'spent', spent))
                                 FROM quota), '{}'::jsonb)
            WHERE (EXISTS (SELECT 1 FROM thread) OR NOT $11::boolean) AND NOT EXISTS (SELECT 1 FROM over)
              AND NOT (EXISTS (SELECT 1 FROM thread) AND EXISTS (SELECT 1 FROM ahead))
           RETURNING id, stateless),
         logged AS (INSERT INTO run_events (run_id, first_seq, last_seq, frames) SELECT id, 1, 1, $16 FROM run),
         -- The incoming messages, placed (read-only: nothing written, what is stored is still known).
         src AS (
           SELECT t.id AS thread_id, $2::text AS resource_id, $9::jsonb AS placed, t.last,
                  (NOT $10::boolean AND EXISTS (SELECT 1 FROM run)) AS write
             FROM thread t),
         ${storePlacedRows('src', 'm_')},
         history AS (
           SELECT ${MESSAGE_ROW_COLUMNS}, m."createdAt" AS created
             FROM mastra_messages m WHERE m.thread_id = $1 AND EXISTS (SELECT 1 FROM thread)
            ORDER BY m."createdAt" DESC, m.id DESC LIMIT $8)
         SELECT 'q' AS kind, jsonb_build_object('tokens', tokens, 'spent', spent, 'retryMs', retry_ms) AS body,
                NULL::bigint AS position FROM quota
         UNION ALL SELECT 'r', to_jsonb(stateless), NULL FROM run
         UNION ALL SELECT 'h', jsonb_build_object('id', id, 'role', role, 'content', content, 'createdAt', "createdAt"),
                          row_number() OVER (ORDER BY created, id) FROM history
         UNION ALL SELECT 's', to_jsonb(id), NULL FROM m_existing
         UNION ALL SELECT 'd', a.answer->'message'->'id', NULL
                     FROM m_answers a JOIN m_holders h ON h.thread_id = a.thread_id AND h.call = a.answer->>'toolCallId'
                    WHERE h.done
         UNION ALL SELECT 'b', 'true'::jsonb, NULL FROM ahead WHERE EXISTS (SELECT 1 FROM thread)
         ORDER BY kind, position`,
        [
          run.threadId,
          run.resourceId,
          run.agentId,
          run.title ?? null,
          run.runId,
          run.leaseMs,
          placed.slots,
          run.lastMessages,
          JSON.stringify(placed),
          run.readOnly,
          run.memory,
          run.budget?.tokens ?? null,
          run.budget?.windowMs ?? 86_400_000,
          run.queueTicket ?? null,
          JSON.stringify(
            // A run that stores its messages into a thread that is sure to exist (memory on, not read
            // only) keeps none of them in its input: they are not serialized only to be dropped.
            run.memory && !run.readOnly
              ? { ...run.input, request: { ...run.input.request, messages: undefined } }
              : run.input,
          ),
          log.frames,
        ],
      );
    } catch (err) {
      throw this.runs.conflict(err, run.runId, run.threadId);
    }
    const quota = rows.find((r) => r.kind === 'q')?.body as
      { tokens: string; spent: string; retryMs: number | null } | undefined;
    const budget = quota && { tokens: Number(quota.tokens), spent: Number(quota.spent) };
    if (budget && budget.spent >= budget.tokens) {
      throw new DomainError(
        'QUOTA_EXCEEDED',
        `The token budget of this owner (${budget.tokens} tokens) is spent; retry later`,
        undefined,
        Math.max(1, Math.ceil((quota?.retryMs ?? 1000) / 1000)),
      );
    }
    if (rows.some((r) => r.kind === 'b'))
      throw new DomainError('THREAD_BUSY', `Thread '${run.threadId}' has runs waiting for it`);
    const claimed = rows.find((r) => r.kind === 'r');
    if (!claimed) throw new DomainError('NOT_FOUND', `Thread '${run.threadId}' not found`);
    const history = rows
      .filter((r) => r.kind === 'h')
      .flatMap((r) =>
        messagesOf({ ...(r.body as HistoryRow), createdAt: new Date((r.body as HistoryRow).createdAt) }),
      );
    const stored = new Set(rows.filter((r) => r.kind === 's').map((r) => r.body as string));
    const answered = new Set(rows.filter((r) => r.kind === 'd').map((r) => r.body as string));
    // A message is new unless its row is stored, or (a tool result) the row of its call holds it.
    const isNew = (m: StoredMessage) =>
      !stored.has(rowId(run.threadId, m.id)) && !(m.role === 'tool' && answered.has(m.id));
    return {
      history: [...history, ...run.incoming.filter(isNew)],
      stateless: claimed.body === true,
      ...(budget ? { budget } : {}),
      log,
    };
  }

  /** The thread's stored assistant messages that made these tool calls, in the thread's order. */
  async callersOf(threadId: string, resourceId: string, toolCallIds: string[]): Promise<StoredMessage[]> {
    const rows = await this.messages.callers(threadId, resourceId, toolCallIds);
    const wanted = new Set(toolCallIds);
    return rows
      .flatMap(messagesOf)
      .filter((m) => m.role === 'assistant' && m.toolCalls?.some((call) => wanted.has(call.id)));
  }

  /**
   * Records the run's end, what it produced and its log's last events in one statement; true if it
   * ended the run (the tail is settled by what became of it). Nothing is stored by a run another
   * claim holds (its lease lapsed: that claim's record and checkpoint stand), nor into a thread
   * deleted meanwhile, nor by a stateless run (even if a thread of that id exists by now).
   * Unanswered tool calls close with the run.
   * The thread is locked before the run is touched, in the order a claim takes them (thread, then
   * the run's slot): a claim of the next run waits for this end instead of deadlocking with it.
   */
  async endRun(run: EndRun): Promise<boolean> {
    const placed = placeMessages(run.threadId, run.produced);
    const tail = run.tail?.chunk;
    const rows = await queryPrepared<{ ended: number }>(
      this.db,
      'io-bridge.end-run',
      `WITH locked AS (SELECT id FROM mastra_threads WHERE id = $6 AND "resourceId" = $2 FOR UPDATE),
       ended AS (
         UPDATE runs SET status = $3, error_code = $4, error_message = $5, finished_at = now(), updated_at = now(),
                checkpoint = NULL, input = NULL, progress = NULL, usage = $8::jsonb, tokens = $9
          WHERE id = $1 AND ${unindexed(`resource_id = $2 AND attempt = $10 AND ${ACTIVE}`)} AND (SELECT count(*) FROM locked) >= 0
          RETURNING id, stateless, started_at),
       closed AS (
         UPDATE run_tool_calls SET status = 'done' WHERE run_id IN (SELECT id FROM ended) AND status <> 'done'),
       clock AS (
         UPDATE mastra_threads SET io_bridge_last_message_at = ${clockAfter('io_bridge_last_message_at', '$11::int')},
                "updatedAt" = now() AT TIME ZONE 'UTC', "updatedAtZ" = now()
          WHERE id IN (SELECT id FROM locked) AND $11::int > 0 AND EXISTS (SELECT 1 FROM ended WHERE NOT stateless)
          RETURNING id, io_bridge_last_message_at AS last),
       src AS (SELECT id AS thread_id, $2::text AS resource_id, $7::jsonb AS placed, last, true AS write FROM clock),
       ${storePlacedRows('src', 'p_')},
       runs_ended AS (${runSpans('ended', 'locked', '$2')}),
       ${dropAnswerCopies('runs_ended', 'c_')},
       tail AS (${insertChunks('SELECT id, $12::int, $13::int, $14::text, false FROM ended WHERE $14::text IS NOT NULL')}),
       announced AS (SELECT ${announcement} FROM tail WHERE $15::boolean)
       SELECT (SELECT count(*) FROM ended)::int AS ended, (SELECT count(*) FROM announced) AS announced`,
      [
        run.runId,
        run.resourceId,
        run.end.status,
        run.end.code ?? null,
        run.end.message ?? null,
        run.threadId,
        JSON.stringify(placed),
        run.end.usage ? JSON.stringify(run.end.usage) : null,
        tokensOf(run.end.usage),
        run.attempt,
        placed.slots,
        ...(tail ? [tail.first, tail.last, tail.frames] : [0, 0, null]),
        run.tail?.announce ?? false,
      ],
    ).catch((err: unknown) => {
      run.tail?.settle('failed');
      throw err;
    });
    // Not ended: another claim holds the run, and the tail's log stops here (RunStreams).
    const ended = rows[0].ended > 0;
    run.tail?.settle(ended ? 'stored' : 'superseded');
    return ended;
  }
}
