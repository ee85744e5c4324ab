/**
 * Threads API benchmark: seeds one owner with 100,000 threads (one of them with 1,000 messages) next to a
 * second owner with as many, then measures the list and messages endpoints over HTTP (sequential
 * requests on a keep-alive connection), checks with EXPLAIN that the list query walks
 * `mastra_threads_io_bridge_owner_idx`, and deletes every seeded row at the end. Threads and messages
 * are rows of Mastra's memory (`mastra_threads`, `mastra_messages`, src/threads/mastra-rows.ts).
 *
 * `benchThreads(baseUrl, databaseUrl)` runs against a service that is already listening on the same
 * database (for run-bench.ts or another harness). Standalone: `node dist-bench/bench/threads-bench.js` starts the service itself,
 * on `DATABASE_URL` or, when unset, on an embedded Postgres in `.data/bench-threads-postgres`.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { createApp, logLevels } from '../src/app.factory';
import { loadConfig } from '../src/config/config';
import { resolveDatabase } from '../src/database/resolve-database';
import { placeMessages } from '../src/threads/mastra-rows';
import { StoredMessage } from '../src/threads/message-format';
import { MESSAGES_PAGE_SQL } from '../src/threads/messages.repository';
import { THREAD_COLUMNS } from '../src/threads/threads.repository';

const THREADS_PER_OWNER = 100_000;
const MESSAGES = 1_000;
const PAGE = 50;
const WALK_PAGES = 20;
const MESSAGE_PAGE = 100;
const BEFORE_PAGES = 5;
const WARMUP = 200;
const MEASURED = 500;
const LIST_INDEX = 'mastra_threads_io_bridge_owner_idx';
const AGENT_INDEX = 'mastra_threads_io_bridge_agent_idx';
const MESSAGES_INDEX = 'mastra_messages_thread_id_createdat_idx';

/** Latencies of one measurement in milliseconds; `bytes` is the size of the last response body. */
export type LatencyStat = {
  name: string;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  bytes: number;
};

export type PlanCheck = {
  name: string;
  /** The index the query should walk. */
  index: string;
  usesIndex: boolean;
  /** Whether the plan sorts (a keyset page walked in index order needs no Sort node). */
  sorts: boolean;
  /** The plan's scan node, e.g. `Index Scan using mastra_threads_io_bridge_owner_idx on mastra_threads`. */
  scan: string;
  executionMs: number;
  lines: string[];
};

export type ThreadsBenchResult = {
  owner: string;
  otherOwner: string;
  threadsPerOwner: number;
  messages: number;
  serverVersion: string;
  /** CPUs, their model and the 1-minute load average before and after: the figures are only as quiet as the machine. */
  machine: { cpus: number; model: string; loadBefore: number; loadAfter: number };
  seedMs: number;
  analyzeMs: number;
  cleanupMs: number;
  /** Over HTTP, request sent to body read. */
  http: LatencyStat[];
  /** The same SQL as the service, straight on a pg client: the database's share of the HTTP figure. */
  db: LatencyStat[];
  plans: PlanCheck[];
  /** Whether the list query with a cursor is an Index Scan on mastra_threads_io_bridge_owner_idx. */
  listUsesIndex: boolean;
};

// ---------------------------------------------------------------------------------------------------
// SQL: the service's own queries (src/threads/threads.repository.ts, messages.repository.ts), for
// EXPLAIN and the db-only rows

const LIST_AFTER_SQL = `SELECT ${THREAD_COLUMNS} FROM mastra_threads
  WHERE "resourceId" = $1 AND ("updatedAtZ", id) < ($3::timestamptz, $4)
  ORDER BY "updatedAtZ" DESC, id DESC LIMIT $2`;

const LIST_AGENT_AFTER_SQL = `SELECT ${THREAD_COLUMNS} FROM mastra_threads
  WHERE "resourceId" = $1 AND io_bridge_agent_id = $3 AND ("updatedAtZ", id) < ($4::timestamptz, $5)
  ORDER BY "updatedAtZ" DESC, id DESC LIMIT $2`;

const FIND_SQL = `SELECT ${THREAD_COLUMNS} FROM mastra_threads WHERE id = $1 AND ($2::text IS NULL OR "resourceId" = $2)`;

// ---------------------------------------------------------------------------------------------------
// Seeding and cleanup: set-based, parameters only

/**
 * `$2` threads for owner `$1`, newest first by g; every 10th thread is the `assistant` agent's. Both
 * times as Mastra keeps them: UTC without a zone (`createdAt`) and with one (`createdAtZ`).
 */
const SEED_THREADS_SQL = `INSERT INTO mastra_threads (id, "resourceId", io_bridge_agent_id, title, metadata,
                                    "createdAt", "updatedAt", "createdAtZ", "updatedAtZ")
  SELECT $1 || '-t' || g, $1,
         CASE WHEN g % 10 = 0 THEN 'assistant' WHEN g % 10 < 5 THEN 'writer' END,
         'Bench thread ' || g, '{}'::jsonb,
         times.created AT TIME ZONE 'UTC', times.updated AT TIME ZONE 'UTC', times.created, times.updated
    FROM generate_series(1, $2::int) AS g,
         LATERAL (SELECT now() - interval '30 days' - g * interval '1 second' AS created,
                         now() - g * interval '1 second' - $3::int * interval '1 millisecond' AS updated) AS times`;

/**
 * The rows `$4` (placed by mastra-rows.ts, numbered from 1 in `ord`) in thread `$1` of owner `$2`,
 * in order a millisecond apart, the last one now; the thread's clock (`io_bridge_last_message_at`)
 * at its last row. `$3`: how many rows.
 */
const SEED_MESSAGES_SQL = `WITH inserted AS (
    INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "createdAtZ", "resourceId")
    SELECT r.id, $1, r.content, r.role, 'v2', times.created AT TIME ZONE 'UTC', times.created, $2
      FROM jsonb_to_recordset($4::jsonb) AS r(id text, role text, content text, ord int),
           LATERAL (SELECT now() - ($3::int - r.ord) * interval '1 millisecond' AS created) AS times
    RETURNING "createdAtZ")
  UPDATE mastra_threads SET io_bridge_last_message_at = (SELECT max("createdAtZ") FROM inserted)
   WHERE id = $1 AND "resourceId" = $2`;

const FILLER =
  'The quick brown fox jumps over the lazy dog; a benchmark message of ordinary length, about two lines of chat text.';

/** MESSAGES messages, user and assistant in turn (`m1`..), placed into rows as the service places them. */
function seedRows(threadId: string) {
  const messages = Array.from({ length: MESSAGES }, (_, i): StoredMessage => ({
    id: `m${i + 1}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `Message ${i + 1}: ${FILLER}`,
  }));
  return placeMessages(threadId, messages).rows.map((row, i) => ({ ...row, ord: i + 1 }));
}

async function seed(client: Client, owner: string, otherOwner: string, messageThread: string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(SEED_THREADS_SQL, [owner, THREADS_PER_OWNER, 0]);
    // The other owner's threads interleave in time with the first's: only resourceId tells them apart.
    await client.query(SEED_THREADS_SQL, [otherOwner, THREADS_PER_OWNER, 500]);
    await client.query(SEED_MESSAGES_SQL, [
      messageThread,
      owner,
      MESSAGES,
      JSON.stringify(seedRows(messageThread)),
    ]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

async function cleanup(client: Client, owners: string[]): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(
      'DELETE FROM mastra_messages WHERE thread_id IN (SELECT id FROM mastra_threads WHERE "resourceId" = ANY($1::text[]))',
      [owners],
    );
    await client.query('DELETE FROM mastra_threads WHERE "resourceId" = ANY($1::text[])', [owners]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
  // Leaves no dead rows or 200,000-row statistics behind in a shared database.
  await client.query('VACUUM (ANALYZE) mastra_threads, mastra_messages');
}

// ---------------------------------------------------------------------------------------------------
// Measuring

const round = (ms: number) => Math.round(ms * 1000) / 1000;

function stat(name: string, samples: number[], bytes: number): LatencyStat {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return {
    name,
    requests: sorted.length,
    p50: round(rank(0.5)),
    p99: round(rank(0.99)),
    max: round(sorted[sorted.length - 1]),
    bytes,
  };
}

/** Runs `once` WARMUP times, then MEASURED times timing each; `once` returns the response size. */
async function measure(
  name: string,
  once: () => Promise<number>,
): Promise<{ stat: LatencyStat; samples: number[] }> {
  for (let i = 0; i < WARMUP; i++) await once();
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < MEASURED; i++) {
    const start = performance.now();
    bytes = await once();
    samples.push(performance.now() - start);
  }
  return { stat: stat(name, samples, bytes), samples };
}

type ThreadsPage = {
  threads: Array<{ id: string; resourceId: string; agentId?: string }>;
  nextCursor: string | null;
};
type MessagesPage = { messages: Array<{ id: string; role: string }>; nextCursor: string | null };

class Api {
  constructor(
    private readonly prefix: string,
    private readonly owner: string,
  ) {}

  /** GET with the owner header; the body is read in full, so the keep-alive connection is reused. */
  async text(path: string): Promise<string> {
    const res = await fetch(`${this.prefix}${path}`, { headers: { 'x-resource-id': this.owner } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${body.slice(0, 300)}`);
    return body;
  }

  async json<T>(path: string): Promise<T> {
    return JSON.parse(await this.text(path)) as T;
  }

  size = async (path: string): Promise<number> => (await this.text(path)).length;
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`threads bench: ${message}`);
}

const threadsPath = (query: Record<string, string>) => `/threads?${new URLSearchParams(query).toString()}`;
const messagesPath = (thread: string, query: Record<string, string>) =>
  `/threads/${encodeURIComponent(thread)}/messages?${new URLSearchParams(query).toString()}`;

/** The first page and the cursors of the next `pages` pages, checked for order, owner and overlap. */
async function walkCursors(api: Api, owner: string, pages: number): Promise<string[]> {
  const seen = new Set<string>();
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page <= pages; page++) {
    const body = await api.json<ThreadsPage>(
      threadsPath({ limit: String(PAGE), ...(cursor ? { cursor } : {}) }),
    );
    check(body.threads.length === PAGE, `page ${page + 1} has ${body.threads.length} threads`);
    body.threads.forEach((t, i) => {
      check(t.resourceId === owner, `page ${page + 1} lists another owner's thread ${t.id}`);
      check(t.id === `${owner}-t${page * PAGE + i + 1}`, `page ${page + 1} is out of order at ${t.id}`);
      check(!seen.has(t.id), `thread ${t.id} listed twice`);
      seen.add(t.id);
    });
    check(body.nextCursor !== null, `page ${page + 1} has no nextCursor`);
    cursor = body.nextCursor!;
    cursors.push(cursor);
  }
  return cursors.slice(0, pages);
}

/** `before` cursors of the `pages` message pages older than the latest, checked for order and ids. */
async function messageCursors(api: Api, thread: string, pages: number): Promise<string[]> {
  const cursors: string[] = [];
  let before: string | undefined;
  for (let page = 0; page <= pages; page++) {
    const body = await api.json<MessagesPage>(
      messagesPath(thread, { limit: String(MESSAGE_PAGE), format: 'agui', ...(before ? { before } : {}) }),
    );
    const first = MESSAGES - (page + 1) * MESSAGE_PAGE + 1;
    check(body.messages.length === MESSAGE_PAGE, `message page ${page + 1} has ${body.messages.length}`);
    check(
      body.messages.every((m, i) => m.id === `m${first + i}`),
      `message page ${page + 1} does not hold m${first}..m${first + MESSAGE_PAGE - 1} in order`,
    );
    check(body.nextCursor !== null, `message page ${page + 1} has no nextCursor`);
    before = body.nextCursor!;
    cursors.push(before);
  }
  return cursors.slice(0, pages);
}

async function explain(
  client: Client,
  name: string,
  index: string,
  sql: string,
  params: unknown[],
): Promise<PlanCheck> {
  const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
  const lines = rows.map((r) => r['QUERY PLAN']);
  const node = (l: string) => l.trim().replace(/^->\s*/, '');
  const onIndex = lines
    .map(node)
    .find((l) => new RegExp(`^Index (Only )?Scan( Backward)? using ${index} `).test(l));
  const scan = onIndex ?? lines.map(node).find((l) => /Scan/.test(l)) ?? '(no scan node)';
  const execution = lines.find((l) => l.startsWith('Execution Time'));
  return {
    name,
    index,
    usesIndex: onIndex !== undefined,
    sorts: lines.some((l) => /^Sort\b/.test(node(l))),
    scan: scan.replace(/\s+\(cost=.*$/, ''),
    executionMs: Number(/([\d.]+) ms/.exec(execution ?? '')?.[1] ?? NaN),
    lines,
  };
}

/** A keyset cursor as the service makes it (base64url of `["updatedAtZ"::text, id]`) for row `offset`. */
async function cursorAt(client: Client, owner: string, offset: number): Promise<{ key: string; id: string }> {
  const { rows } = await client.query<{ key: string; id: string }>(
    `SELECT "updatedAtZ"::text AS key, id FROM mastra_threads WHERE "resourceId" = $1
      ORDER BY "updatedAtZ" DESC, id DESC OFFSET $2 LIMIT 1`,
    [owner, offset],
  );
  return rows[0];
}

const encodeCursor = (c: { key: string; id: string }) =>
  Buffer.from(JSON.stringify([c.key, c.id])).toString('base64url');

// ---------------------------------------------------------------------------------------------------
// The benchmark

/**
 * Seeds, measures and cleans up. `baseUrl` is the service's URL with its prefix
 * (http://127.0.0.1:3000/io-bridge) or its origin alone, then the default prefix /io-bridge is used;
 * `databaseUrl` must be the database that service uses. The service must run with AUTH_MODE=none: the
 * owner is sent as X-Resource-Id.
 */
export async function benchThreads(baseUrl: string, databaseUrl: string): Promise<ThreadsBenchResult> {
  const run = randomBytes(6).toString('hex');
  const owner = `bench-${run}`;
  const otherOwner = `bench-${run}-other`;
  const messageThread = `${owner}-t1`;
  const url = new URL(baseUrl);
  const prefix = url.pathname === '/' ? '/io-bridge' : url.pathname.replace(/\/$/, '');
  const api = new Api(`${url.origin}${prefix}`, owner);
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  let seeded = false;
  const loadBefore = os.loadavg()[0];
  try {
    const serverVersion = (await client.query<{ v: string }>('SELECT version() AS v')).rows[0].v;

    log(`seeding ${THREADS_PER_OWNER * 2} threads (owners ${owner}, ${otherOwner}) and ${MESSAGES} messages`);
    let start = performance.now();
    seeded = true;
    await seed(client, owner, otherOwner, messageThread);
    const seedMs = round(performance.now() - start);
    start = performance.now();
    await client.query('ANALYZE mastra_threads');
    await client.query('ANALYZE mastra_messages');
    const analyzeMs = round(performance.now() - start);
    log(`seeded in ${seedMs.toFixed(0)} ms, ANALYZE ${analyzeMs.toFixed(0)} ms`);

    // Correctness first: the walk, the agent filter and the message pages return what was seeded.
    const listCursors = await walkCursors(api, owner, WALK_PAGES);
    const agentPage = await api.json<ThreadsPage>(threadsPath({ limit: String(PAGE), agentId: 'assistant' }));
    check(
      agentPage.threads.length === PAGE && agentPage.threads.every((t) => t.agentId === 'assistant'),
      'agentId=assistant returns other threads',
    );
    const beforeCursors = await messageCursors(api, messageThread, BEFORE_PAGES);
    const uiPage = await api.json<MessagesPage>(messagesPath(messageThread, { limit: String(MESSAGE_PAGE) }));
    check(uiPage.messages.length === MESSAGE_PAGE, `format=ui returns ${uiPage.messages.length} messages`);

    const http: LatencyStat[] = [];
    const add = async (name: string, path: string) => {
      const m = await measure(name, () => api.size(path));
      http.push(m.stat);
      log(`${name}: p50 ${m.stat.p50.toFixed(2)} ms, p99 ${m.stat.p99.toFixed(2)} ms`);
      return m;
    };

    await add('threads limit=50, first page', threadsPath({ limit: String(PAGE) }));
    const walk: number[] = [];
    for (const [i, cursor] of listCursors.entries()) {
      const m = await add(
        `threads walk page ${i + 2} (cursor)`,
        threadsPath({ limit: String(PAGE), cursor }),
      );
      walk.push(...m.samples);
    }
    // The walk's pages as one distribution as well.
    http.push(stat(`threads walk, ${listCursors.length} pages pooled`, walk, http[http.length - 1].bytes));
    for (const [label, offset] of [
      ['after row 50,000', 50_000],
      ['last page', THREADS_PER_OWNER - PAGE],
    ] as const) {
      const cursor = encodeCursor(await cursorAt(client, owner, offset - 1));
      await add(`threads deep cursor (${label})`, threadsPath({ limit: String(PAGE), cursor }));
    }
    // Measured first and again here: tells an order effect (process warm-up, machine load) from a real cost.
    await add('threads limit=50, first page (again)', threadsPath({ limit: String(PAGE) }));
    await add('threads agentId=assistant', threadsPath({ limit: String(PAGE), agentId: 'assistant' }));
    for (const format of ['ui', 'agui']) {
      const query = { limit: String(MESSAGE_PAGE), format };
      await add(`messages format=${format}, latest`, messagesPath(messageThread, query));
      for (const [i, before] of beforeCursors.entries()) {
        await add(
          `messages format=${format}, before page ${i + 2}`,
          messagesPath(messageThread, { ...query, before }),
        );
      }
    }

    // The database's share: the service's SQL over one pg connection, no HTTP or Nest in between.
    const cursor10 = await cursorAt(client, owner, PAGE * 10 - 1);
    const db: LatencyStat[] = [];
    const sql = async (name: string, text: string, params: unknown[]) => {
      const m = await measure(name, async () => (await client.query(text, params)).rowCount ?? 0);
      db.push({ ...m.stat, bytes: 0 });
    };
    await sql('db: threads page with cursor', LIST_AFTER_SQL, [owner, PAGE + 1, cursor10.key, cursor10.id]);
    await sql('db: thread lookup (owned check)', FIND_SQL, [messageThread, owner]);
    await sql('db: messages latest page', MESSAGES_PAGE_SQL, [
      messageThread,
      owner,
      MESSAGE_PAGE + 1,
      null,
      null,
    ]);

    const plans = [
      await explain(client, 'threads list with cursor (page 11)', LIST_INDEX, LIST_AFTER_SQL, [
        owner,
        PAGE + 1,
        cursor10.key,
        cursor10.id,
      ]),
      await explain(client, 'threads list agentId=assistant with cursor', AGENT_INDEX, LIST_AGENT_AFTER_SQL, [
        owner,
        PAGE + 1,
        'assistant',
        cursor10.key,
        cursor10.id,
      ]),
      await explain(client, 'messages before page', MESSAGES_INDEX, MESSAGES_PAGE_SQL, [
        messageThread,
        owner,
        MESSAGE_PAGE + 1,
        // The cursor's time and id (the service decodes them so, threads.service.ts).
        ...(JSON.parse(Buffer.from(beforeCursors[0], 'base64url').toString('utf8')) as [string, string]),
      ]),
    ];

    start = performance.now();
    await cleanup(client, [owner, otherOwner]);
    seeded = false;
    const cleanupMs = round(performance.now() - start);

    return {
      owner,
      otherOwner,
      threadsPerOwner: THREADS_PER_OWNER,
      messages: MESSAGES,
      serverVersion,
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model.trim() ?? 'unknown',
        loadBefore: Number(loadBefore.toFixed(2)),
        loadAfter: Number(os.loadavg()[0].toFixed(2)),
      },
      seedMs,
      analyzeMs,
      cleanupMs,
      http,
      db,
      plans,
      listUsesIndex: plans[0].usesIndex,
    };
  } finally {
    try {
      if (seeded) await cleanup(client, [owner, otherOwner]);
    } finally {
      await client.end();
    }
  }
}

function log(message: string): void {
  process.stderr.write(`[threads-bench] ${message}\n`);
}

/** The result as a plain-text report. */
export function formatThreadsBench(r: ThreadsBenchResult): string {
  const width = Math.max(...[...r.http, ...r.db].map((s) => s.name.length));
  const row = (s: LatencyStat) =>
    `${s.name.padEnd(width)}  ${String(s.requests).padStart(6)}  ${s.p50.toFixed(2).padStart(8)}  ${s.p99
      .toFixed(2)
      .padStart(8)}  ${s.max.toFixed(2).padStart(8)}  ${s.bytes ? String(s.bytes).padStart(7) : '      -'}`;
  const header = `${'measurement'.padEnd(width)}  ${'n'.padStart(6)}  ${'p50 ms'.padStart(8)}  ${'p99 ms'.padStart(
    8,
  )}  ${'max ms'.padStart(8)}  ${'bytes'.padStart(7)}`;
  const plans = r.plans.flatMap((p) => [
    '',
    `EXPLAIN (ANALYZE, BUFFERS) ${p.name}: ${p.usesIndex ? 'Index Scan on' : 'does NOT use'} ${p.index}` +
      `${p.sorts ? ', with a Sort' : ', no Sort'}, execution ${p.executionMs} ms`,
    ...p.lines.slice(0, 8).map((l) => `  ${l}`),
  ]);
  return [
    `Threads API benchmark (${r.serverVersion.split(' on ')[0]})`,
    `seed: ${r.threadsPerOwner.toLocaleString('en')} threads x 2 owners + ${r.messages} messages in ${r.seedMs.toFixed(
      0,
    )} ms; ANALYZE ${r.analyzeMs.toFixed(0)} ms; cleanup (delete + VACUUM ANALYZE) ${r.cleanupMs.toFixed(0)} ms`,
    `${r.machine.cpus} x ${r.machine.model}, load average ${r.machine.loadBefore} before, ${r.machine.loadAfter} after`,
    `${WARMUP} warm-up + ${MEASURED} measured sequential requests per row, keep-alive`,
    '',
    header,
    '-'.repeat(header.length),
    ...r.http.map(row),
    '-'.repeat(header.length),
    ...r.db.map(row),
    ...plans,
    '',
    `list query with a cursor uses ${LIST_INDEX}: ${r.listUsesIndex ? 'yes' : 'NO'}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const env = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    // The owner is the X-Resource-Id header, as in benchThreads' requests.
    AUTH_MODE: 'none',
    EMBEDDED_PG_PORT: '54332',
    EMBEDDED_PG_DIR: '.data/bench-threads-postgres',
  });
  // The embedded Postgres logs before the app (and its logger levels) exists.
  Logger.overrideLogger(logLevels(env.logLevel));
  const { config, stop } = await resolveDatabase(env);
  try {
    const app = await createApp(config);
    try {
      await app.listen(0, '127.0.0.1');
      const origin = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const result = await benchThreads(`${origin}${config.prefix || '/'}`, config.database.url!);
      console.log(formatThreadsBench(result));
    } finally {
      await app.close();
    }
  } finally {
    await stop();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
