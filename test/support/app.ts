import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Client } from 'pg';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/config';
import { messagesOf } from '../../src/threads/mastra-rows';
import { MESSAGE_ROW_COLUMNS } from '../../src/threads/messages.repository';
import type { StoredMessage } from '../../src/threads/message-format';
import { serviceLogs } from './log-sink';
import { uid } from './sse';

export type TestApp = {
  app: NestFastifyApplication;
  baseUrl: string;
  runUrl: string;
  close: () => Promise<void>;
};

/**
 * The real service on a real Fastify server and the e2e database; `env` overrides configuration.
 * Its log lines go to `serviceLogs`: a test that provokes errors on purpose expects them there.
 */
export async function startApp(env: Record<string, string> = {}): Promise<TestApp> {
  const config = loadConfig({
    DATABASE_URL: process.env.E2E_DATABASE_URL,
    LOG_LEVEL: 'error',
    PORT: '0',
    ...env,
  });
  const app = await createApp(config, serviceLogs);
  await app.listen(0, '127.0.0.1');
  const baseUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { app, baseUrl, runUrl: `${baseUrl}${config.prefix}/run`, close: () => app.close() };
}

/** A direct connection to the e2e database, to check what the service recorded. */
export async function db<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: process.env.E2E_DATABASE_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A run row that is active and holds its lease for an hour, written straight to the database (a
 * repository's test needs no engine): at `attempt`, a later claim's when above 1. Returns its id.
 */
export async function insertLiveRun(owner: string, attempt = 1): Promise<string> {
  const runId = uid('run');
  await db((c) =>
    c.query(
      `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, lease_expires_at, attempt)
       VALUES ($1, $2, $3, 'assistant', 'running', now() + interval '1 hour', $4)`,
      [runId, uid('thread'), owner, attempt],
    ),
  );
  return runId;
}

/** The messages a thread stores, in order: its rows in Mastra's memory, read as io-bridge reads them. */
export async function storedMessages(client: Client, threadId: string): Promise<StoredMessage[]> {
  const { rows } = await client.query(
    `SELECT ${MESSAGE_ROW_COLUMNS} FROM mastra_messages m WHERE m.thread_id = $1 ORDER BY m."createdAt", m.id`,
    [threadId],
  );
  return rows.flatMap(messagesOf);
}

/** A thread's title as stored (none: undefined). */
export async function storedTitle(client: Client, threadId: string): Promise<string | undefined> {
  const { rows } = await client.query(`SELECT NULLIF(title, '') AS title FROM mastra_threads WHERE id = $1`, [
    threadId,
  ]);
  return rows[0]?.title ?? undefined;
}

/** Polls `probe` until it returns a value, failing after `timeoutMs`: for effects that land after a response ends. */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export type RunRow = {
  status: string;
  error_code: string | null;
  error_message: string | null;
  finished_at: Date | null;
};

/** A run's row in `runs`, undefined when there is none. */
export const runRow = (runId: string) =>
  db((c) =>
    c
      .query<RunRow>('SELECT status, error_code, error_message, finished_at FROM runs WHERE id = $1', [runId])
      .then((r) => r.rows[0] as RunRow | undefined),
  );

/** A run's row once it is no longer running (for ends recorded after the client went away). */
export const endedRunRow = (runId: string) =>
  eventually(async () => {
    const row = await runRow(runId);
    return row?.status === 'running' ? undefined : row;
  });

/** The run's row (`progress`, `parked`) once `ready` accepts it: a step checkpointed, a park recorded. */
export const runRowWhen = (
  runId: string,
  ready: (row: { progress: unknown; parked: string | null }) => boolean,
  timeoutMs = 10_000,
) =>
  eventually(async () => {
    const { rows } = await db((q) => q.query('SELECT progress, parked FROM runs WHERE id = $1', [runId]));
    return rows[0] && ready(rows[0]) ? true : undefined;
  }, timeoutMs);
