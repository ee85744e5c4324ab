import type { Client } from 'pg';

/**
 * What the chaos harness (bench/chaos.ts) learns beside the streams: who wrote what in the database,
 * and what the replicas logged.
 *
 * Writers: each replica connects with `PGOPTIONS='-c chaos.replica=<label>'` (a setting of its own
 * sessions, nothing the service reads), and triggers on the harness's database (never a migration)
 * record each claim of a run (its insert, each `attempt` taken) with the replica that made it, and
 * every write to a run (`runs`, `run_events`) by a replica other than the one that made the run's
 * latest claim. A write the fence stops matches no row and fires no trigger.
 */
export const AUDIT_SQL = `
  CREATE TABLE chaos_claims (
    run_id  text NOT NULL,
    attempt integer NOT NULL,
    replica text,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE INDEX chaos_claims_run ON chaos_claims (run_id, attempt DESC);
  CREATE TABLE chaos_foreign_writes (
    tbl        text NOT NULL,
    run_id     text NOT NULL,
    replica    text,
    holder     text,
    attempt    integer,
    old_status text,
    status     text,
    error_code text,
    first_seq  integer,
    last_seq   integer,
    terminal   boolean,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  -- VOLATILE: a fresh snapshot, so a claim committed while the writing statement ran is seen.
  CREATE FUNCTION chaos_holder(run text) RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT replica FROM chaos_claims WHERE run_id = run ORDER BY attempt DESC, at DESC LIMIT 1
  $$;
  CREATE FUNCTION chaos_on_runs() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    me text := current_setting('chaos.replica', true);
    holder text;
  BEGIN
    IF TG_OP = 'INSERT' OR NEW.attempt > OLD.attempt THEN
      INSERT INTO chaos_claims (run_id, attempt, replica) VALUES (NEW.id, NEW.attempt, me);
    -- A replica that finds its run taken over gives its claim back (handovers + 1): bookkeeping, not a write of the run.
    ELSIF to_jsonb(NEW) - 'handovers' IS DISTINCT FROM to_jsonb(OLD) - 'handovers' THEN
      holder := chaos_holder(NEW.id);
      IF me IS DISTINCT FROM holder THEN
        INSERT INTO chaos_foreign_writes (tbl, run_id, replica, holder, attempt, old_status, status, error_code)
        VALUES ('runs', NEW.id, me, holder, NEW.attempt, OLD.status, NEW.status, NEW.error_code);
      END IF;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER chaos_runs AFTER INSERT OR UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION chaos_on_runs();
  CREATE FUNCTION chaos_on_run_events() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    me text := current_setting('chaos.replica', true);
    holder text := chaos_holder(NEW.run_id);
    run record;
  BEGIN
    IF me IS DISTINCT FROM holder THEN
      SELECT status, attempt INTO run FROM runs WHERE id = NEW.run_id;
      INSERT INTO chaos_foreign_writes (tbl, run_id, replica, holder, attempt, status, first_seq, last_seq, terminal)
      VALUES ('run_events', NEW.run_id, me, holder, run.attempt, run.status, NEW.first_seq, NEW.last_seq, NEW.terminal);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER chaos_run_events AFTER INSERT OR UPDATE ON run_events
    FOR EACH ROW EXECUTE FUNCTION chaos_on_run_events();
`;

export const installAudit = async (db: Client) => {
  await db.query(AUDIT_SQL);
};

export type ForeignWrite = {
  tbl: 'runs' | 'run_events';
  runId: string;
  replica: string | null;
  holder: string | null;
  attempt: number | null;
  oldStatus: string | null;
  status: string | null;
  errorCode: string | null;
  firstSeq: number | null;
  lastSeq: number | null;
  terminal: boolean | null;
  at: number;
};

const ACTIVE = new Set(['running', 'waiting_for_tool']);

/**
 * Sorts the writes by replicas that did not hold the run: expected ones (the reaper ending a run out
 * of attempts INTERRUPTED; a reader closing the log of a run already ended) and the rest, stale.
 */
export function classify(w: ForeignWrite): 'reaped' | 'closed an ended log' | 'stale' {
  if (w.tbl === 'runs' && ACTIVE.has(w.oldStatus ?? '') && w.errorCode === 'INTERRUPTED') return 'reaped';
  if (w.tbl === 'run_events' && !ACTIVE.has(w.status ?? '')) return 'closed an ended log';
  return 'stale';
}

export async function foreignWrites(db: Client): Promise<ForeignWrite[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT tbl, run_id, replica, holder, attempt, old_status, status, error_code, first_seq, last_seq, terminal,
            (extract(epoch FROM at) * 1000)::float8 AS at
       FROM chaos_foreign_writes ORDER BY at`,
  );
  return rows.map((r) => ({
    tbl: r.tbl as ForeignWrite['tbl'],
    runId: r.run_id as string,
    replica: r.replica as string | null,
    holder: r.holder as string | null,
    attempt: r.attempt as number | null,
    oldStatus: r.old_status as string | null,
    status: r.status as string | null,
    errorCode: r.error_code as string | null,
    firstSeq: r.first_seq as number | null,
    lastSeq: r.last_seq as number | null,
    terminal: r.terminal as boolean | null,
    at: r.at as number,
  }));
}

export type Claim = {
  runId: string;
  attempt: number;
  replica: string | null;
  previous: string | null;
  at: number;
};

/** Every claim, with the replica that held the attempt before it. */
export async function claims(db: Client): Promise<Claim[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT run_id, attempt, replica,
            lag(replica) OVER (PARTITION BY run_id ORDER BY attempt, at) AS previous,
            (extract(epoch FROM at) * 1000)::float8 AS at
       FROM chaos_claims ORDER BY at`,
  );
  return rows.map((r) => ({
    runId: r.run_id as string,
    attempt: r.attempt as number,
    replica: r.replica as string | null,
    previous: r.previous as string | null,
    at: r.at as number,
  }));
}

/** Active runs whose latest claim is `label`'s: what a fault on that replica hits. */
export async function runsHeldBy(db: Client, label: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM runs WHERE status IN ('running', 'waiting_for_tool') AND chaos_holder(id) = $1`,
    [label],
  );
  return rows[0].n;
}

/** Log lines the report counts, by the words the replicas write. */
export const LOG_PATTERNS = {
  logCompleteThoughActive: 'its log is complete though the run is active',
  endedByAnotherInstance: 'was ended by another instance',
  continuedHere: ': continued here',
  couldNotBeContinued: 'could not be continued',
} as const;

export type LogCounts = {
  lines: number;
  warnings: number;
  errors: number;
  patterns: Record<keyof typeof LOG_PATTERNS, number>;
  /** Warning and error messages with ids and numbers masked, and how often each came. */
  messages: Record<string, number>;
};

export const emptyCounts = (): LogCounts => ({
  lines: 0,
  warnings: 0,
  errors: 0,
  patterns: {
    logCompleteThoughActive: 0,
    endedByAnotherInstance: 0,
    continuedHere: 0,
    couldNotBeContinued: 0,
  },
  messages: {},
});

/** Run ids, uuids and numbers masked: messages that differ only in them count together. */
const mask = (msg: string) =>
  msg
    .replace(/chaos-run-[\w-]+/g, '<run>')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/\d+/g, 'N')
    .slice(0, 240);

/** Counts a replica's output line by line (pino JSON; other lines, such as stack traces, count as lines). */
export class LogScan {
  readonly counts = emptyCounts();
  private partial = '';

  feed(chunk: Buffer): void {
    const lines = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) this.line(line);
  }

  private line(line: string): void {
    if (!line) return;
    const c = this.counts;
    c.lines++;
    for (const [key, words] of Object.entries(LOG_PATTERNS))
      if (line.includes(words)) c.patterns[key as keyof typeof LOG_PATTERNS]++;
    let entry: { level?: number; msg?: string; err?: { message?: string } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      return;
    }
    if ((entry.level ?? 0) < 40) return;
    if ((entry.level ?? 0) >= 50) c.errors++;
    else c.warnings++;
    const key = `${(entry.level ?? 0) >= 50 ? 'error' : 'warn'}: ${mask(entry.msg ?? entry.err?.message ?? '')}`;
    c.messages[key] = (c.messages[key] ?? 0) + 1;
  }
}

/** Sums counts (of a replica's processes, or of all replicas). */
export function addCounts(into: LogCounts, from: LogCounts): LogCounts {
  into.lines += from.lines;
  into.warnings += from.warnings;
  into.errors += from.errors;
  for (const key of Object.keys(into.patterns) as Array<keyof typeof LOG_PATTERNS>)
    into.patterns[key] += from.patterns[key];
  for (const [msg, n] of Object.entries(from.messages)) into.messages[msg] = (into.messages[msg] ?? 0) + n;
  return into;
}
