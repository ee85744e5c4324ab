import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { TokenUsage } from '../../protocol/usage';

export const RUN_STATUSES = ['running', 'waiting_for_tool', 'finished', 'error', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses of a run still in progress: the one definition of "active". */
export const ACTIVE_STATUSES: readonly RunStatus[] = ['running', 'waiting_for_tool'];
/** The same as an SQL condition on `runs.status`. */
export const ACTIVE = `status IN (${ACTIVE_STATUSES.map((s) => `'${s}'`).join(', ')})`;
/**
 * Conditions no index can serve (a boolean test matches no index or partial-index predicate): a
 * per-run statement keeps finding its row by primary key whatever plan Postgres picks, where a
 * generic plan chose the partial index of active runs, which holds every run ended since the last vacuum.
 */
export const unindexed = (conditions: string) => `(${conditions}) IS TRUE`;
export const isActiveStatus = (status: string): boolean =>
  (ACTIVE_STATUSES as readonly string[]).includes(status);

@Entity({ name: 'runs' })
export class Run {
  @PrimaryColumn({ type: 'text' })
  id: string;

  @Column({ name: 'thread_id', type: 'text' })
  threadId: string;

  @Column({ name: 'resource_id', type: 'text' })
  resourceId: string;

  @Column({ name: 'agent_id', type: 'text' })
  agentId: string;

  @Column({ type: 'text' })
  status: RunStatus;

  /** Named no memory: not part of any thread (its thread_id is only the request's threadId). */
  @Column({ type: 'boolean', default: false })
  stateless: boolean;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ name: 'error_code', type: 'text', nullable: true })
  errorCode: string | null;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage: string | null;

  /**
   * Which claim of the run holds it (1, then one more each time another replica takes it over, or the
   * reaper ends it): only that claim writes the run and its event log.
   */
  @Column({ type: 'int', default: 1 })
  attempt: number;

  /** The tokens its model calls reported, one entry per provider and model; null when none. */
  @Column({ type: 'jsonb', nullable: true })
  usage: TokenUsage[] | null;

  /** Input plus output tokens of `usage`: what budgets count. */
  @Column({ type: 'bigint', default: 0 })
  tokens: string;
}
