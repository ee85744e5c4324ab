import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ACTIVE } from './run.entity';

/** What a waiting request learns each time it looks: whether it is first, and the run it waits for. */
export type QueuePlace = { first: boolean; active: string | null; lapsed: boolean };

/**
 * Requests waiting for their busy thread (`run_queue`, `forwardedProps.ifBusy`), on every replica:
 * taken in order, `interrupt` before `enqueue`, then first come. A place lasts while its replica
 * renews it; one left to expire (its replica died) no longer holds the thread's queue up.
 */
@Injectable()
export class RunQueueRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Takes a place at the end of the thread's queue (places of the thread that expired go); its ticket. */
  async enqueue(threadId: string, runId: string, urgent: boolean, ttlMs: number): Promise<string> {
    const [{ ticket }]: Array<{ ticket: string }> = await this.db.query(
      `WITH expired AS (DELETE FROM run_queue WHERE thread_id = $1 AND expires_at < now())
       INSERT INTO run_queue (thread_id, run_id, urgent, expires_at)
       VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING ticket`,
      [threadId, runId, urgent, ttlMs],
    );
    return ticket;
  }

  /**
   * Renews the place, and says whether it is the first of the thread's live places, and the thread's
   * active run (with whether its lease lapsed: its replica died, a claim reaps it).
   */
  async look(ticket: string, threadId: string, ttlMs: number): Promise<QueuePlace> {
    // A data-modifying WITH runs whether or not the query reads it.
    const [place]: QueuePlace[] = await this.db.query(
      `WITH renewed AS (
         UPDATE run_queue SET expires_at = now() + $3 * interval '1 millisecond' WHERE ticket = $1 RETURNING 1),
       head AS (
         SELECT ticket FROM run_queue WHERE thread_id = $2 AND (expires_at >= now() OR ticket = $1)
          ORDER BY urgent DESC, ticket LIMIT 1),
       active AS (
         SELECT id, lease_expires_at < now() AS lapsed FROM runs
          WHERE thread_id = $2 AND NOT stateless AND ${ACTIVE} LIMIT 1)
       SELECT COALESCE((SELECT ticket = $1 FROM head), false) AS first,
              (SELECT id FROM active) AS active,
              COALESCE((SELECT lapsed FROM active), false) AS lapsed`,
      [ticket, threadId, ttlMs],
    );
    return { first: place.first, active: place.active, lapsed: place.lapsed };
  }

  async leave(ticket: string): Promise<void> {
    await this.db.query('DELETE FROM run_queue WHERE ticket = $1', [ticket]);
  }
}
