import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Client } from 'pg';
import { LapsedRunsRepository } from '../../src/runs/storage/lapsed-runs.repository';
import { db, endedRunRow, eventually, runRow, startApp, storedMessages, TestApp } from '../support/app';
import { openRun, postRun, runInput, runToFrames, types, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

const GET_CITY = {
  name: 'get_city',
  description: 'Asks the user for a city',
  parameters: { type: 'object' },
};

/** A run on `threadId` that waits for the frontend tool get_city, stored in its thread. */
const toolRun = (threadId: string) =>
  runInput('/tool get_city {"city":"Paris"}', {
    threadId,
    tools: [GET_CITY],
    forwardedProps: { memoryOptions: {} },
  });

/** A plain run on the thread finishes: the thread takes runs again. */
async function expectThreadFree(t: TestApp, threadId: string): Promise<void> {
  const next = runInput('still there?', { threadId, forwardedProps: { memoryOptions: {} } });
  const { res, frames } = await runToFrames(t.runUrl, next);
  expect(res.status).toBe(200);
  expect(types(frames).at(-1)).toBe('RUN_FINISHED');
}

describe('a client that disconnects while its run is being claimed', () => {
  let t: TestApp;
  let locker: Client | undefined;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await locker?.end().catch(() => undefined);
    await t.close();
  });

  it('ends the run at once as cancelled, never starts it, and leaves the thread free', async () => {
    const input = toolRun(uid('thread'));
    const created = await fetch(`${t.baseUrl}/io-bridge/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: input.threadId }),
    });
    expect(created.status).toBe(201);

    // The claim touches the thread's row: while the test's transaction locks it, the claim waits.
    locker = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT id FROM mastra_threads WHERE id = $1 FOR UPDATE', [input.threadId]);
    const { pid } = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0];

    // Resolves once the server has seen this client go (the route's own close listener runs in the same emit).
    let responseClosed!: Promise<void>;
    const server: Server = t.app.getHttpServer();
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.endsWith('/run')) responseClosed = new Promise((resolve) => res.once('close', resolve));
    };
    server.on('request', onRequest);
    const client = new AbortController();
    const posted = postRun(t.runUrl, input, { signal: client.signal }).catch((err: unknown) => err);

    await eventually(() =>
      db((c) => c.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])).then(
        (r) => (r.rowCount ? true : undefined),
      ),
    );
    client.abort();
    expect(await posted).toMatchObject({ name: 'AbortError' });
    await responseClosed;
    server.off('request', onRequest);
    await locker.query('COMMIT');

    const row = await endedRunRow(input.runId);
    expect(row).toMatchObject({ status: 'cancelled', error_code: 'CANCELLED' });
    // The engine never ran: it would have registered the frontend call and stored an assistant message.
    const calls = await db((c) => c.query('SELECT 1 FROM run_tool_calls WHERE run_id = $1', [input.runId]));
    expect(calls.rowCount).toBe(0);
    const produced = await db((c) => storedMessages(c, input.threadId));
    expect(produced.filter((m) => m.role === 'assistant')).toEqual([]);
    await expectThreadFree(t, input.threadId);
  });
});

describe('a run whose lease another instance took', () => {
  const LEASE_MS = 1500;
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ RUN_LEASE_MS: String(LEASE_MS), RUN_MAX_ATTEMPTS: '1' });
  });
  afterAll(() => t.close());

  it('ends its stream with RUN_ERROR INTERRUPTED within a renewal, closing what is open, and keeps the reaper’s record', async () => {
    const input = toolRun(uid('thread'));
    const run = await openRun(t.runUrl, input);
    await run.waitFor((e) => e.type === 'TOOL_CALL_END');
    await eventually(async () =>
      (await runRow(input.runId))?.status === 'waiting_for_tool' ? true : undefined,
    );

    // As after an outage of this instance longer than its lease: the lease lapses and a reaper ends the run.
    const reaper = t.app.get(LapsedRunsRepository);
    const reapedAt = await eventually(async () => {
      await db((c) =>
        c.query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
          input.runId,
        ]),
      );
      // This instance's own renewal may extend the lease in between: then expire it again.
      return (await reaper.endLapsed(input.threadId)).includes(input.runId) ? Date.now() : undefined;
      // A loaded machine can let the renewal in between several times running.
    }, 20_000);

    const error = await run.waitFor((e) => e.type === 'RUN_ERROR', 5000);
    const lostAfterMs = Date.now() - reapedAt;
    expect(error).toMatchObject({ code: 'INTERRUPTED' });
    const frames = await run.done;
    assertStreamRules(frames, input);
    expect(types(frames).at(-1)).toBe('RUN_ERROR');
    // One renewal period is LEASE_MS / 3; the lease itself is the outer bound.
    expect(lostAfterMs).toBeLessThan(LEASE_MS);

    expect(await runRow(input.runId)).toMatchObject({
      status: 'error',
      error_code: 'INTERRUPTED',
      error_message: 'The instance running it stopped',
    });
    await expectThreadFree(t, input.threadId);
  });
});
