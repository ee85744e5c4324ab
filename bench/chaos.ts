/**
 * Issue 33's chaos harness (`npm run chaos`; not part of `npm test`, whose test/durability/chaos.e2e-spec.ts runs a
 * small one through this module): N built replicas (`node dist/src/main.js`) on a fresh database of
 * their own, faults in series (every K seconds one replica, in turn, `kill -9` and restarted a second
 * later, and a `SIGSTOP` longer than the lease, then `SIGCONT`), C runs in flight all along, each a
 * client that rejoins any live replica when its stream breaks. Once the faults stop and the runs
 * settle, every run's stream, answer and stored thread is checked, the database's record of who wrote
 * to which run is read (bench/chaos-audit.ts) and the replicas' logs counted: a JSON report and a
 * summary. Options and what the report means: bench/README.md, "Chaos harness".
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import { runMigrations } from '../src/database/migrate';
import { MAIN, startBuiltService, type BuiltService } from '../test/support/built-service';
import { rawLog, verified } from '../test/support/durable';
import { parseFrames, type Frame } from '../test/support/sse';
import { assertStreamRules } from '../test/support/stream-rules';
import {
  addCounts,
  classify,
  claims,
  emptyCounts,
  foreignWrites,
  installAudit,
  LogScan,
  runsHeldBy,
  type ForeignWrite,
  type LogCounts,
} from './chaos-audit';
import { driveRun, type RunTrace, type Target } from './chaos-client';

export type Fault = 'kill' | 'pause';

export type ChaosOptions = {
  /** N replicas. */
  replicas: number;
  /** C runs in flight at all times while the faults go on. */
  concurrency: number;
  /** Runs started in all (0: as many as the faults' duration takes). */
  totalRuns: number;
  /** D: faults stop after this long (with `faults` given: after the list). */
  durationS: number;
  /** K: one fault every so many seconds, the next not before the previous is over. */
  faultEveryS: number;
  /** The faults in order; empty: kills for D, with `pauses` pauses spread among them. */
  faults: Fault[];
  /**
   * Which replica a fault hits: each in `turn`, or the `busiest` (the one holding the most runs,
   * once one holds any: every fault hits live runs however long restarts take).
   */
  target: 'turn' | 'busiest';
  pauses: number;
  /** A killed replica is started again this long after its kill. */
  restartAfterMs: number;
  /** How long a paused replica stays stopped (default 2 × the lease). */
  pauseMs: number;
  leaseMs: number;
  maxAttempts: number;
  /** The answer: `words` words (`w1` … after the run's tag `r<n>`), one every `wordMs`. */
  words: number;
  wordMs: number;
  /** A run whose client has no terminal event this long after its start counts as never reaching one. */
  runTimeoutMs: number;
  /** forwardedProps.disconnectGraceMs of each run. */
  graceMs: number;
  /** The Postgres server the fresh database is created in. */
  pgUrl: string;
  keepDatabase: boolean;
  /** Where the JSON report goes; the replicas' logs go to `<report without .json>-logs/`. */
  report: string;
  /** The service's entry point. */
  main: string;
};

export function defaultOptions(): ChaosOptions {
  return {
    replicas: 3,
    concurrency: 30,
    totalRuns: 0,
    durationS: 120,
    faultEveryS: 10,
    faults: [],
    target: 'turn',
    pauses: 1,
    restartAfterMs: 1000,
    pauseMs: 0,
    leaseMs: 3000,
    maxAttempts: 20,
    words: 40,
    wordMs: 150,
    runTimeoutMs: 90_000,
    graceMs: 60_000,
    pgUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
    keepDatabase: false,
    report: `.data/chaos-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    main: MAIN,
  };
}

/** Option names as env variables (`CHAOS_RUNS`) and arguments (`--runs=100`). */
const NAMES: Record<string, keyof ChaosOptions> = {
  REPLICAS: 'replicas',
  RUNS: 'concurrency',
  TOTAL_RUNS: 'totalRuns',
  DURATION_S: 'durationS',
  FAULT_EVERY_S: 'faultEveryS',
  FAULTS: 'faults',
  TARGET: 'target',
  PAUSES: 'pauses',
  RESTART_AFTER_MS: 'restartAfterMs',
  PAUSE_MS: 'pauseMs',
  LEASE_MS: 'leaseMs',
  MAX_ATTEMPTS: 'maxAttempts',
  WORDS: 'words',
  WORD_MS: 'wordMs',
  RUN_TIMEOUT_MS: 'runTimeoutMs',
  DISCONNECT_GRACE_MS: 'graceMs',
  PG_URL: 'pgUrl',
  KEEP_DB: 'keepDatabase',
  REPORT: 'report',
  MAIN: 'main',
};

/** The defaults, then `CHAOS_<NAME>` variables, then `--<name>=<value>` arguments. */
export function parseOptions(env: NodeJS.ProcessEnv, argv: string[]): ChaosOptions {
  const o = defaultOptions();
  const set = (name: string, value: string) => {
    const key = NAMES[name];
    if (!key) throw new Error(`unknown option ${name}: one of ${Object.keys(NAMES).join(', ')}`);
    const current = o[key];
    if (key === 'faults') {
      const list = value.split(',').filter(Boolean);
      if (list.some((f) => f !== 'kill' && f !== 'pause'))
        throw new Error(`faults: kill or pause, got ${value}`);
      o.faults = list as Fault[];
    } else if (typeof current === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${name}: a number, got ${value}`);
      (o[key] as number) = n;
    } else if (typeof current === 'boolean') (o[key] as boolean) = value === '1' || value === 'true';
    else (o[key] as string) = value;
  };
  for (const name of Object.keys(NAMES)) if (env[`CHAOS_${name}`]) set(name, env[`CHAOS_${name}`]!);
  for (const arg of argv) {
    const m = /^--([a-z-_]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`arguments are --name=value, got ${arg}`);
    set(m[1].replace(/-/g, '_').toUpperCase(), m[2]);
  }
  return o;
}

/**
 * The faults planned: the given list, or one every K seconds for D with the pauses spread among them
 * (then each pause comes once its share of D has passed, however many faults came before it).
 */
export function schedule(o: ChaosOptions): Fault[] {
  if (o.faults.length) return o.faults;
  const slots = Math.max(1, Math.floor(o.durationS / o.faultEveryS));
  const list: Fault[] = Array.from({ length: slots }, () => 'kill');
  for (let p = 0; p < Math.min(o.pauses, slots); p++)
    list[Math.floor(((p + 0.5) * slots) / Math.min(o.pauses, slots))] = 'pause';
  return list;
}

type Process = {
  label: string;
  pid: number;
  startedAt: number;
  endedBy?: 'kill' | 'stop';
  log: LogScan;
};

type Slot = {
  index: number;
  service?: BuiltService;
  label: string;
  up: boolean;
  paused: boolean;
  kills: number;
  pauses: number;
  processes: Process[];
};

export type FaultRecord = {
  kind: Fault;
  replica: string;
  /** ms from the first run's start. */
  atMs: number;
  /** Active runs whose latest claim was the replica's when the fault began. */
  runsHeld: number;
  /** A kill: its successor ready; a pause: SIGCONT. */
  overAtMs: number;
};

export type PauseRecord = {
  replica: string;
  stoppedAtMs: number;
  continuedAtMs: number;
  /** Runs another replica claimed from it while it was stopped. */
  runsLost: number;
  /** Writes it made to runs another replica had claimed (should be none). */
  staleWrites: number;
  examples: ForeignWrite[];
  /** Its `was ended by another instance` lines. */
  endedByAnotherLogged: number;
};

type Example = { n: number; runId: string; problem: string };

export type ChaosReport = {
  options: ChaosOptions;
  database: string;
  startedAt: string;
  /** First run started to the last run settled; the faults' span. */
  totalMs: number;
  faultsMs: number;
  runs: {
    started: number;
    finished: number;
    /** RUN_ERROR by code (an unlogged one, sent when its log could not be stored, as `<code> (unlogged)`). */
    runError: Record<string, number>;
    /** A rejoin answered 204 (the run ended, the client has everything) though the client had no terminal event. */
    noTerminal204: number;
    /** No terminal event within runTimeoutMs. */
    neverTerminal: number;
    /** Refused with a status the client cannot retry. */
    refused: number;
    /** Runs whose latest claim was attempt 2 or more: continued at least once. */
    continued: number;
    /** The highest attempt of any run. */
    maxAttempt: number;
    /** Runs whose record (`runs`) does not say what its stream ended with. */
    recordDisagrees: number;
    /** Runs refused, without a terminal event, or whose record disagrees: what their clients went through. */
    examples: Example[];
  };
  malformed: { count: number; examples: Example[] };
  /**
   * Runs whose client was sent, under an id, another event than the run's log holds under it (read
   * whole from a replica once all settled): a frame sent that was never stored, or overwritten.
   */
  divergent: { count: number; examples: Example[] };
  answers: {
    /** Words w1…wN missing from the last text message of finished runs, summed. */
    lostWords: number;
    runsWithLostWords: number;
    /** Finished runs whose last text message is not exactly the answer (lost words, or words added). */
    notExact: number;
    examples: Example[];
  };
  stored: {
    /** Finished runs whose thread holds more than its user message and one answer. */
    twice: number;
    /** Finished runs whose answer is stored under another id than the one streamed. */
    underAnotherId: number;
    /** Finished runs whose thread does not hold the answer. */
    missing: number;
    examples: Example[];
  };
  clients: {
    connections: number;
    rejoins: number;
    /** POSTs sent again: the first was cut before the run was stored. */
    reposts: number;
    /** Streams ended RUN_MOVED (a drain). */
    moved: number;
    /** Connections cut by a fault (the stream broke, or no answer). */
    cut: number;
    /** Responses retried (429, 5xx, 404 on a rejoin, 409 on a repost), by status. */
    retried: Record<string, number>;
    /** Frames not as docs/protocol.md#the-stream writes them. */
    framingErrors: number;
  };
  faults: FaultRecord[];
  pauses: PauseRecord[];
  fencing: {
    /** Writes to an active run by a replica that did not hold its latest claim. */
    stale: number;
    /** The reaper ending a run out of attempts (expected). */
    reaped: number;
    /** A reader closing the log of a run already ended (expected). */
    closedEndedLogs: number;
    examples: ForeignWrite[];
  };
  replicas: Array<{ slot: number; kills: number; pauses: number; processes: string[]; log: LogCounts }>;
  logLines: LogCounts;
  /** The harness's own trouble (a replica that would not start, a check it could not make). */
  problems: string[];
  /** Each run as its client saw it: how it ended, its last event, its record's attempt, its connections. */
  traces: Array<{
    n: number;
    runId: string;
    end: RunTrace['end'];
    last?: string;
    events: number;
    attempt?: number;
    ms: number;
    /** `<post|rejoin>@<replica>:<status>:<how it ended>:<frames>` each. */
    connections: string;
    /** For a run that did not end RUN_FINISHED, or ended so in a malformed stream: its last events (`*`: without `id:`). */
    tail?: string[];
  }>;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const logDirOf = (report: string) => resolve(`${report.replace(/\.json$/, '')}-logs`);
const EXAMPLES = 8;
const push = (list: Example[], e: Example) => {
  if (list.length < EXAMPLES) list.push(e);
};

/** The text of the last text message the client was sent, and its id. */
function lastText(frames: Frame[]): { messageId?: string; text: string } {
  const start = frames.filter((f) => f.event.type === 'TEXT_MESSAGE_START').at(-1);
  const messageId = start?.event.messageId as string | undefined;
  const text = frames
    .filter((f) => f.event.type === 'TEXT_MESSAGE_CONTENT' && f.event.messageId === messageId)
    .map((f) => f.event.delta as string)
    .join('');
  return { messageId, text };
}

/** The last events, one line each: `<id>[*] <type> [code] [message id…] [delta]` (`*`: sent without `id:`). */
const tail = (frames: Frame[]) =>
  frames
    .slice(-16)
    .map(({ id, event, unlogged }) =>
      [
        `${id}${unlogged ? '*' : ''}`,
        event.type,
        event.code,
        typeof event.messageId === 'string' ? event.messageId.slice(0, 8) : undefined,
        typeof event.delta === 'string' ? JSON.stringify(event.delta) : undefined,
      ]
        .filter((x) => x !== undefined)
        .join(' '),
    );

/** Words `w1`…`w<count>` not found, in order, in `text`. */
function lostWords(text: string, count: number): number {
  const got = text.split(/\s+/);
  let at = 0;
  let lost = 0;
  for (let i = 1; i <= count; i++) {
    const found = got.indexOf(`w${i}`, at);
    if (found < 0) lost++;
    else at = found + 1;
  }
  return lost;
}

type StoredMessage = { id: string; role: string; content?: unknown };

async function storedThread(
  pick: () => Target | undefined,
  threadId: string,
): Promise<StoredMessage[] | string> {
  let last = 'no replica up';
  for (let i = 0; i < 10; i++) {
    const target = pick();
    if (target) {
      try {
        const res = await fetch(
          `${target.base}/threads/${encodeURIComponent(threadId)}/messages?format=agui&limit=500`,
        );
        if (res.status === 200) return ((await res.json()) as { messages: StoredMessage[] }).messages;
        last = `${res.status} ${(await res.text()).slice(0, 200)}`;
        if (res.status === 404) return `thread ${threadId}: ${last}`;
      } catch (err) {
        last = String(err);
      }
    }
    await sleep(500);
  }
  return `thread ${threadId}: ${last}`;
}

/** The run's whole log as a replica serves it (a rejoin from the start), parsed. */
async function storedLog(pick: () => Target | undefined, runId: string): Promise<Frame[] | string> {
  let last = 'no replica up';
  for (let i = 0; i < 10; i++) {
    const target = pick();
    if (target) {
      try {
        const raw = await rawLog(target.base, runId);
        return parseFrames(raw).frames;
      } catch (err) {
        last = String(err);
      }
    }
    await sleep(500);
  }
  return last;
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

export async function runChaos(
  options: ChaosOptions,
  progress: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<ChaosReport> {
  const o = { ...options, pauseMs: options.pauseMs || 2 * options.leaseMs };
  const faults = schedule(o);
  const tag = randomBytes(3).toString('hex');
  const database = `chaos_${tag}`;
  const server = new URL(o.pgUrl);
  const url = new URL(o.pgUrl);
  url.pathname = `/${database}`;
  const logDir = logDirOf(o.report);
  mkdirSync(logDir, { recursive: true });
  const problems: string[] = [];

  const admin = new Client({ connectionString: server.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const db = new Client({ connectionString: url.toString() });
  const slots: Slot[] = Array.from({ length: o.replicas }, (_, index) => ({
    index,
    label: '',
    up: false,
    paused: false,
    kills: 0,
    pauses: 0,
    processes: [],
  }));
  const files: WriteStream[] = [];
  try {
    await runMigrations(url.toString());
    await db.connect();
    await installAudit(db);

    const start = async (slot: Slot) => {
      const label = `r${slot.index}.${slot.processes.length + 1}`;
      const log = new LogScan();
      const file = createWriteStream(join(logDir, `${label}.log`));
      files.push(file);
      const service = await startBuiltService(
        {
          DATABASE_URL: url.toString(),
          // Every session of this replica names it: the audit triggers record who wrote.
          PGOPTIONS: `-c chaos.replica=${label}`,
          LOG_LEVEL: 'log',
          RUN_LEASE_MS: String(o.leaseMs),
          RUN_MAX_ATTEMPTS: String(o.maxAttempts),
          // Per-owner and per-address caps lifted: the clients are one owner on one address.
          MAX_ACTIVE_RUNS_PER_OWNER: '1000000',
          MAX_READERS_PER_OWNER: '1000000',
          MAX_READERS_PER_RUN: '1000000',
          RATE_LIMIT_PER_MINUTE: '1000000',
        },
        60_000,
        o.main,
        (chunk) => {
          log.feed(chunk);
          file.write(chunk);
        },
      );
      slot.service = service;
      slot.label = label;
      slot.processes.push({ label, pid: service.pid, startedAt: Date.now(), log });
      slot.up = true;
    };

    progress(
      `chaos: ${o.replicas} replicas on ${database} (lease ${o.leaseMs} ms, ${o.maxAttempts} attempts)`,
    );
    await Promise.all(slots.map(start));

    // Clients connect to the replicas that are up, in turn (a paused one stays in: nobody told them).
    let turn = 0;
    const pick = (): Target | undefined => {
      const up = slots.filter((s) => s.up);
      if (!up.length) return undefined;
      const s = up[turn++ % up.length];
      return { label: s.label, base: s.service!.base };
    };

    const t0 = Date.now();
    let faultsOver = false;
    let started = 0;
    const traces: RunTrace[] = [];
    const canStart = () => !faultsOver && (!o.totalRuns || started < o.totalRuns);
    const workers = Array.from({ length: o.concurrency }, async () => {
      while (canStart()) {
        const n = ++started;
        traces.push(
          await driveRun(n, tag, pick, {
            wordMs: o.wordMs,
            words: o.words,
            runTimeoutMs: o.runTimeoutMs,
            graceMs: o.graceMs,
          }),
        );
      }
    });
    const clients = Promise.all(workers);
    progress(
      `chaos: ${o.concurrency} runs in flight${o.totalRuns ? ` (${o.totalRuns} in all)` : ''}; faults: ${faults.join(', ')}, one every ${o.faultEveryS} s`,
    );

    /** The up replica holding the most runs, once one holds any (or after 30 s, the first). */
    const busiest = async () => {
      for (const until = Date.now() + 30_000; ; await sleep(100)) {
        const held = await Promise.all(
          slots.filter((s) => s.up && !s.paused).map(async (s) => ({ s, n: await runsHeldBy(db, s.label) })),
        );
        held.sort((a, b) => b.n - a.n);
        if (held[0]?.n || Date.now() > until) return held[0]?.s ?? slots[0];
      }
    };
    const faultRecords: FaultRecord[] = [];
    const pauseRecords: PauseRecord[] = [];
    const since = () => Date.now() - t0;
    let lastOver = t0;
    for (let i = 0; i < faults.length; i++) {
      // Every K s, and at least K/2 after the previous fault is over (its successor ready, or SIGCONT):
      // in series, with the replicas whole for a while in between (a paused one notices what it lost).
      const due = Math.max(t0 + (i + 1) * o.faultEveryS * 1000, lastOver + o.faultEveryS * 500);
      if (!o.faults.length && due - t0 > o.durationS * 1000) break;
      await sleep(Math.max(0, due - Date.now()));
      // Without a list, the pauses come at their share of D (slow restarts leave fewer faults than planned).
      const pausesDone = faultRecords.filter((f) => f.kind === 'pause').length;
      const kind: Fault = o.faults.length
        ? faults[i]
        : pausesDone < o.pauses && since() >= ((pausesDone + 0.5) * o.durationS * 1000) / o.pauses
          ? 'pause'
          : 'kill';
      const slot = o.target === 'busiest' ? await busiest() : slots[i % slots.length];
      const label = slot.label;
      const pid = slot.service!.pid;
      const record: FaultRecord = {
        kind,
        replica: label,
        atMs: since(),
        runsHeld: await runsHeldBy(db, label),
        overAtMs: 0,
      };
      faultRecords.push(record);
      if (kind === 'kill') {
        progress(
          `chaos: ${(record.atMs / 1000).toFixed(1)} s kill -9 ${label} (${record.runsHeld} runs held)`,
        );
        slot.up = false;
        process.kill(pid, 'SIGKILL');
        slot.kills++;
        slot.processes.at(-1)!.endedBy = 'kill';
        await sleep(o.restartAfterMs);
        try {
          await start(slot);
        } catch (err) {
          problems.push(`${label}'s successor did not start: ${String(err).slice(0, 500)}`);
          throw err;
        }
      } else {
        progress(
          `chaos: ${(record.atMs / 1000).toFixed(1)} s SIGSTOP ${label} for ${o.pauseMs} ms (${record.runsHeld} runs held)`,
        );
        process.kill(pid, 'SIGSTOP');
        slot.paused = true;
        slot.pauses++;
        const stoppedAt = Date.now();
        await sleep(o.pauseMs);
        process.kill(pid, 'SIGCONT');
        slot.paused = false;
        pauseRecords.push({
          replica: label,
          stoppedAtMs: stoppedAt - t0,
          continuedAtMs: since(),
          runsLost: 0,
          staleWrites: 0,
          examples: [],
          endedByAnotherLogged: 0,
        });
      }
      record.overAtMs = since();
      lastOver = Date.now();
    }
    faultsOver = true;
    const faultsMs = faultRecords.length ? faultRecords.at(-1)!.overAtMs - faultRecords[0].atMs : 0;
    progress(
      `chaos: faults over at ${(since() / 1000).toFixed(1)} s; ${started} runs started, waiting for them`,
    );
    await clients;
    // Runs whose clients gave up may still be going: let them end before their threads are read.
    for (const until = Date.now() + 30_000; Date.now() < until; await sleep(250)) {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM runs WHERE status IN ('running', 'waiting_for_tool')`,
      );
      if (rows[0].n === 0) break;
    }
    const totalMs = since();
    progress(`chaos: all runs settled at ${(totalMs / 1000).toFixed(1)} s; checking`);

    traces.sort((a, b) => a.n - b.n);
    const report = await check(
      o,
      database,
      t0,
      traces,
      pick,
      db,
      slots,
      faultRecords,
      pauseRecords,
      problems,
    );
    report.totalMs = totalMs;
    report.faultsMs = faultsMs;
    mkdirSync(dirname(resolve(o.report)), { recursive: true });
    writeFileSync(o.report, `${JSON.stringify(report, null, 2)}\n`);
    return report;
  } finally {
    for (const slot of slots) {
      if (slot.paused) process.kill(slot.service!.pid, 'SIGCONT');
      slot.up = false;
    }
    await Promise.all(slots.flatMap((s) => (s.service ? [s.service.stop()] : [])));
    await Promise.all(files.map((f) => new Promise((r) => f.end(r))));
    await db.end().catch(() => undefined);
    if (!o.keepDatabase) {
      const drop = new Client({ connectionString: server.toString() });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await drop.end();
    }
  }
}

async function check(
  o: ChaosOptions,
  database: string,
  t0: number,
  traces: RunTrace[],
  pick: () => Target | undefined,
  db: Client,
  slots: Slot[],
  faults: FaultRecord[],
  pauses: PauseRecord[],
  problems: string[],
): Promise<ChaosReport> {
  const report: ChaosReport = {
    options: o,
    database,
    startedAt: new Date(t0).toISOString(),
    totalMs: 0,
    faultsMs: 0,
    runs: {
      started: traces.length,
      finished: 0,
      runError: {},
      noTerminal204: 0,
      neverTerminal: 0,
      refused: 0,
      continued: 0,
      maxAttempt: 0,
      recordDisagrees: 0,
      examples: [],
    },
    malformed: { count: 0, examples: [] },
    divergent: { count: 0, examples: [] },
    answers: { lostWords: 0, runsWithLostWords: 0, notExact: 0, examples: [] },
    stored: { twice: 0, underAnotherId: 0, missing: 0, examples: [] },
    clients: { connections: 0, rejoins: 0, reposts: 0, moved: 0, cut: 0, retried: {}, framingErrors: 0 },
    faults,
    pauses,
    fencing: { stale: 0, reaped: 0, closedEndedLogs: 0, examples: [] },
    replicas: [],
    logLines: emptyCounts(),
    problems,
    traces: [],
  };
  const { rows } = await db.query<{ id: string; status: string; error_code: string | null; attempt: number }>(
    'SELECT id, status, error_code, attempt FROM runs WHERE id = ANY($1)',
    [traces.map((t) => t.runId)],
  );
  const records = new Map(rows.map((r) => [r.id, r]));
  const stored = await pool(traces, 8, (t) => storedThread(pick, t.threadId));
  const logs = await pool(traces, 8, (t) => storedLog(pick, t.runId));

  for (const [i, t] of traces.entries()) {
    const ex = (problem: string) => ({ n: t.n, runId: t.runId, problem });
    const c = report.clients;
    c.connections += t.connections.length;
    c.rejoins += t.connections.filter((x) => x.kind === 'rejoin').length;
    c.reposts += t.reposts;
    c.moved += t.connections.filter((x) => x.end === 'moved').length;
    c.cut += t.connections.filter((x) => x.end === 'eof' || x.end === 'error').length;
    for (const x of t.connections)
      if (x.end === 'refused' && x.status !== undefined) c.retried[x.status] = (c.retried[x.status] ?? 0) + 1;
    c.framingErrors += t.framing.length;

    const last = t.frames.at(-1)?.event;
    const terminal = t.end === 'terminal' ? last : undefined;
    const connections = t.connections
      .map((x) => `${x.kind}@${x.replica}:${x.status ?? '-'}:${x.end}:${x.frames}`)
      .join(' ');
    const went = () => `connections ${connections.slice(-400)}`;
    const trace: ChaosReport['traces'][number] = {
      n: t.n,
      runId: t.runId,
      end: t.end,
      ...(last ? { last: `${String(last.type)}${last.code ? ` ${String(last.code)}` : ''}` } : {}),
      events: t.frames.length,
      ...(records.has(t.runId) ? { attempt: records.get(t.runId)!.attempt } : {}),
      ms: t.endedAt - t.startedAt,
      connections,
    };
    report.traces.push(trace);
    if (t.end === '204') report.runs.noTerminal204++;
    if (t.end === 'timeout') report.runs.neverTerminal++;
    if (t.end === 'refused') report.runs.refused++;
    if (t.end !== 'terminal')
      push(
        report.runs.examples,
        ex(
          `${t.end}${t.refusedWith ? ` ${t.refusedWith}` : ''} after ${t.frames.length} events (last ${String(last?.type)}); ${went()}`,
        ),
      );
    if (terminal?.type === 'RUN_FINISHED') report.runs.finished++;
    if (terminal?.type === 'RUN_ERROR') {
      const code = `${String(terminal.code)}${t.frames.at(-1)!.unlogged ? ' (unlogged)' : ''}`;
      report.runs.runError[code] = (report.runs.runError[code] ?? 0) + 1;
    }

    // The stream: the rules over everything the client was sent, across its connections.
    let malformed = t.framing.length ? `framing: ${t.framing[0]}` : '';
    if (!malformed && t.end === 'terminal') {
      try {
        assertStreamRules(t.frames, t);
        const passed = await verified(t.frames).catch(
          (err: unknown) => `@ag-ui/client verifier: ${String(err)}`,
        );
        if (passed !== t.frames.length)
          malformed = typeof passed === 'string' ? passed : `@ag-ui/client verifier passed ${passed} events`;
      } catch (err) {
        malformed = String(err);
      }
    } else if (!malformed && t.frames.length) {
      // No terminal event: still, what came must be well-formed so far (ids, RUN_STARTED first).
      try {
        assertStreamRules(t.frames, t, { ended: false });
      } catch (err) {
        malformed = String(err);
      }
    }
    if (malformed || terminal?.type !== 'RUN_FINISHED') trace.tail = tail(t.frames);
    if (malformed) {
      report.malformed.count++;
      const ids = t.frames.map((f) => f.id);
      push(
        report.malformed.examples,
        ex(
          `${malformed.slice(0, 400)}; ids ${ids.slice(0, 3).join(',')}…${ids.slice(-5).join(',')}; ${went()}`,
        ),
      );
    }

    // The log: what the client was sent under each id is what the run's log holds under it.
    const log = logs[i];
    if (typeof log === 'string') problems.push(`run ${t.n}: its log could not be read: ${log}`);
    else {
      const byId = new Map(log.map((f) => [f.id, JSON.stringify(f.event)]));
      const differs = t.frames.find((f) => !f.unlogged && byId.get(f.id) !== JSON.stringify(f.event));
      if (differs) {
        report.divergent.count++;
        push(
          report.divergent.examples,
          ex(
            `sent as ${differs.id}: ${JSON.stringify(differs.event).slice(0, 160)}; the log has ${byId.get(differs.id)?.slice(0, 160) ?? 'nothing'} (log ${log.length} events, ends ${String(log.at(-1)?.event.type)})`,
          ),
        );
      }
    }

    // The record: what `runs` says against what the stream ended with.
    const record = records.get(t.runId);
    if (record) {
      report.runs.maxAttempt = Math.max(report.runs.maxAttempt, record.attempt);
      if (record.attempt > 1) report.runs.continued++;
      const says =
        terminal?.type === 'RUN_FINISHED'
          ? 'finished'
          : terminal?.type === 'RUN_ERROR'
            ? `error ${String(terminal.code)}`
            : undefined;
      const is = record.status === 'error' ? `error ${record.error_code}` : record.status;
      if (says && says !== is && !(record.status === 'cancelled' && says === 'error CANCELLED')) {
        report.runs.recordDisagrees++;
        push(report.runs.examples, ex(`the stream ended ${says}, the record says ${is}`));
      }
    }

    if (terminal?.type !== 'RUN_FINISHED') continue;
    // The answer: the last text message streamed, whole.
    const { messageId, text } = lastText(t.frames);
    const lost = lostWords(text, o.words);
    report.answers.lostWords += lost;
    if (lost) report.answers.runsWithLostWords++;
    if (text !== t.expected) {
      report.answers.notExact++;
      push(report.answers.examples, ex(`${lost} words lost; streamed ${JSON.stringify(text.slice(0, 300))}`));
    }
    // The thread: the user message and the answer once, under the streamed id.
    const thread = stored[i];
    if (typeof thread === 'string') {
      report.stored.missing++;
      push(report.stored.examples, ex(`thread not read: ${thread}`));
      continue;
    }
    const answers = thread.filter((m) => m.role === 'assistant');
    const whole = answers.filter((m) => m.content === t.expected);
    if (thread.length > 2 || answers.length > 1 || whole.length > 1) {
      report.stored.twice++;
      push(
        report.stored.examples,
        ex(
          `stored ${JSON.stringify(thread.map((m) => ({ id: m.id, role: m.role, content: String(m.content).slice(0, 60) })))}`,
        ),
      );
    }
    if (!whole.length) {
      report.stored.missing++;
      push(report.stored.examples, ex(`answer not stored; assistant messages ${JSON.stringify(answers)}`));
    } else if (!whole.some((m) => m.id === messageId)) {
      report.stored.underAnotherId++;
      push(
        report.stored.examples,
        ex(`answer stored as ${whole.map((m) => m.id).join(', ')}, streamed as ${messageId}`),
      );
    }
  }

  // Fencing: writes to runs by replicas that did not hold them.
  const writes = await foreignWrites(db);
  for (const w of writes) {
    const kind = classify(w);
    if (kind === 'reaped') report.fencing.reaped++;
    else if (kind === 'closed an ended log') report.fencing.closedEndedLogs++;
    else {
      report.fencing.stale++;
      if (report.fencing.examples.length < EXAMPLES) report.fencing.examples.push(w);
    }
  }
  const allClaims = await claims(db);
  for (const p of pauses) {
    const from = t0 + p.stoppedAtMs;
    // Up to the next fault: a later kill of the same replica loses runs too, not to the pause.
    const until = t0 + (faults.find((f) => f.atMs > p.continuedAtMs)?.atMs ?? Infinity);
    // Runs claimed from it during or after its pause; any write by it to one of them after that claim.
    const lost = new Map(
      allClaims
        .filter((c) => c.previous === p.replica && c.at >= from && c.at < until)
        .map((c) => [c.runId, c.at]),
    );
    p.runsLost = lost.size;
    const stale = writes.filter(
      (w) => w.replica === p.replica && lost.has(w.runId) && w.at >= lost.get(w.runId)!,
    );
    p.staleWrites = stale.length;
    p.examples = stale.slice(0, EXAMPLES);
    const slot = slots.find((s) => s.processes.some((x) => x.label === p.replica));
    p.endedByAnotherLogged =
      slot?.processes.find((x) => x.label === p.replica)?.log.counts.patterns.endedByAnotherInstance ?? 0;
  }

  for (const slot of slots) {
    const log = slot.processes.reduce((sum, x) => addCounts(sum, x.log.counts), emptyCounts());
    addCounts(report.logLines, log);
    report.replicas.push({
      slot: slot.index,
      kills: slot.kills,
      pauses: slot.pauses,
      processes: slot.processes.map((x) => `${x.label} (pid ${x.pid}${x.endedBy ? `, ${x.endedBy}ed` : ''})`),
      log,
    });
  }
  return report;
}

const count = (r: Record<string, number>) =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${v}× ${k}`)
    .join(', ') || 'none';

/** The summary printed after a run. */
export function formatChaos(r: ChaosReport): string {
  const o = r.options;
  const lines = [
    `report: ${o.report}; the replicas' logs: ${logDirOf(o.report)}`,
    `Chaos: ${o.replicas} replicas, lease ${o.leaseMs} ms, ${o.maxAttempts} attempts; ${o.concurrency} runs in flight${o.totalRuns ? `, ${o.totalRuns} in all` : ''}; '/slow ${o.wordMs}' answers of ${o.words} words`,
    `faults (${(r.faultsMs / 1000).toFixed(1)} s): ${r.faults.map((f) => `${f.kind} ${f.replica} at ${(f.atMs / 1000).toFixed(1)} s (${f.runsHeld} runs held)`).join('; ')}`,
    `runs started ${r.runs.started}; RUN_FINISHED ${r.runs.finished}; RUN_ERROR ${count(r.runs.runError)}; 204 without terminal ${r.runs.noTerminal204}; never reached terminal ${r.runs.neverTerminal}; refused ${r.runs.refused}`,
    `continued ${r.runs.continued} (max attempt ${r.runs.maxAttempt}); record disagrees with stream ${r.runs.recordDisagrees}`,
    `malformed streams ${r.malformed.count}; streams that differ from the run's log ${r.divergent.count}; lost words ${r.answers.lostWords} (in ${r.answers.runsWithLostWords} runs; ${r.answers.notExact} answers not exact)`,
    `stored twice ${r.stored.twice}; stored under another id ${r.stored.underAnotherId}; answer not stored ${r.stored.missing}`,
    `clients: ${r.clients.connections} connections, ${r.clients.rejoins} rejoins, ${r.clients.cut} cut, ${r.clients.reposts} reposts, ${r.clients.moved} RUN_MOVED; retried ${count(r.clients.retried)}; framing errors ${r.clients.framingErrors}`,
    ...r.pauses.map(
      (p) =>
        `pause ${p.replica} ${(p.stoppedAtMs / 1000).toFixed(1)}–${(p.continuedAtMs / 1000).toFixed(1)} s: ${p.runsLost} runs claimed from it, ${p.staleWrites} writes by it to them after, '${'was ended by another instance'}' logged ${p.endedByAnotherLogged}×`,
    ),
    `fencing: ${r.fencing.stale} stale writes (to active runs, by a replica not holding them); ${r.fencing.reaped} reaped INTERRUPTED; ${r.fencing.closedEndedLogs} ended logs closed`,
    `logs: ${r.logLines.patterns.logCompleteThoughActive}× 'its log is complete though the run is active', ${r.logLines.patterns.endedByAnotherInstance}× 'was ended by another instance', ${r.logLines.patterns.continuedHere}× 'continued here', ${r.logLines.patterns.couldNotBeContinued}× 'could not be continued'; ${r.logLines.warnings} warnings, ${r.logLines.errors} errors`,
    ...r.replicas.map((s) => `  r${s.slot}: ${s.kills} kills, ${s.pauses} pauses; ${s.processes.join(', ')}`),
    ...Object.entries(r.logLines.messages)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([m, n]) => `  ${n}× ${m}`),
    ...[
      ...r.runs.examples,
      ...r.malformed.examples,
      ...r.divergent.examples,
      ...r.answers.examples,
      ...r.stored.examples,
    ].map((e) => `  run ${e.n}: ${e.problem}`),
    ...r.fencing.examples.map(
      (w) => `  stale: ${w.replica} wrote ${w.tbl} of ${w.runId} held by ${w.holder} (${JSON.stringify(w)})`,
    ),
    ...r.problems.map((p) => `  harness: ${p}`),
  ];
  return lines.join('\n');
}

/** Whether a report is clean: what the e2e spec asserts. */
export function clean(r: ChaosReport): boolean {
  return (
    r.malformed.count === 0 &&
    r.divergent.count === 0 &&
    r.answers.lostWords === 0 &&
    r.stored.twice === 0 &&
    r.stored.underAnotherId === 0 &&
    r.stored.missing === 0 &&
    r.runs.finished === r.runs.started &&
    r.fencing.stale === 0 &&
    !r.problems.length
  );
}

async function main(): Promise<void> {
  const options = parseOptions(process.env, process.argv.slice(2));
  const report = await runChaos(options);
  process.stdout.write(`${formatChaos(report)}\nclean: ${clean(report) ? 'yes' : 'no'}\n`);
}

if (require.main === module)
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`chaos: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
