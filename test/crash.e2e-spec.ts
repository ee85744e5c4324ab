import { db, eventually, startApp, TestApp } from './support/app';
import { ChildApp, startChildApp } from './support/child-app';
import { openRun, postRun, uid } from './support/sse';

describe('a replica that dies mid-run', () => {
  let child: ChildApp | undefined;
  let survivor: TestApp | undefined;
  afterAll(async () => {
    child?.kill();
    await survivor?.close();
  });

  it('does not leave its thread busy: after the lease lapses the run is INTERRUPTED and the thread takes runs', async () => {
    child = await startChildApp({ RUN_LEASE_MS: '3000' });
    const runUrl = child.runUrl;

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
    child.kill();
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
