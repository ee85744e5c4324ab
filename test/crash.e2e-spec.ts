import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { db, eventually, startApp, TestApp } from './support/app';
import { openRun, postRun, uid } from './support/sse';

const MAIN = join(__dirname, '..', 'dist', 'src', 'main.js');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

describe('a replica that dies mid-run', () => {
  let child: ChildProcess | undefined;
  let survivor: TestApp | undefined;
  afterAll(async () => {
    child?.kill('SIGKILL');
    await survivor?.close();
  });

  it('does not leave its thread busy: after the lease lapses the run is INTERRUPTED and the thread takes runs', async () => {
    expect(existsSync(MAIN)).toBe(true); // `npm test` builds first (pretest)
    const port = await freePort();
    const env = {
      DATABASE_URL: process.env.E2E_DATABASE_URL,
      PORT: String(port),
      LOG_LEVEL: 'error',
      RUN_LEASE_MS: '3000',
    };
    child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: 'ignore' });
    const runUrl = `http://127.0.0.1:${port}/io-bridge/run`;
    await eventually(
      () =>
        fetch(`http://127.0.0.1:${port}/io-bridge/runs/none`).then(
          (r) => (r.status === 404 ? true : undefined),
          () => undefined,
        ),
      20_000,
    );

    const threadId = uid('crash');
    const deadRun = uid('run');
    const live = await openRun(runUrl, {
      threadId,
      runId: deadRun,
      messages: [{ id: 'u1', role: 'user', content: '/slow 200 a b c d e f g h i j k l m n o p' }],
      tools: [],
      context: [],
    });
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    child.kill('SIGKILL');
    await live.done.catch(() => undefined);

    survivor = await startApp({ RUN_LEASE_MS: '3000' });
    const next = (n: number) => ({
      threadId,
      runId: uid(`after-${n}`),
      messages: [{ id: `n${n}`, role: 'user', content: 'still there?' }],
      tools: [],
      context: [],
    });
    const busy = await postRun(survivor.runUrl, next(0));
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: 'THREAD_BUSY' });

    let attempt = 1;
    const accepted = await eventually(async () => {
      const res = await postRun(survivor!.runUrl, next(attempt++));
      if (res.status === 200) return res.text();
      expect(res.status).toBe(409);
      await res.text();
      return undefined;
    }, 15_000);
    expect(accepted).toContain('RUN_FINISHED');
    const dead = await db((c) => c.query('SELECT status, error_code FROM runs WHERE id = $1', [deadRun]));
    expect(dead.rows[0]).toEqual({ status: 'error', error_code: 'INTERRUPTED' });
  });
});
