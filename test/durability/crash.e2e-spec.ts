import { BuiltService, startBuiltService } from '../support/built-service';
import { db, eventually, runRow, startApp, TestApp } from '../support/app';
import { Frame, memoryOf, openRun, postRun, readRun, shownText, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';
import { messagesOf, Placed } from '../../src/threads/mastra-rows';

/** The built service in a child process (so it can be SIGKILLed), ready to take requests. */
// RUN_MAX_ATTEMPTS=1: these replicas never continue a run (durable-runs.e2e-spec.ts covers that): it ends INTERRUPTED.
const spawnInstance = (env: Record<string, string>) =>
  startBuiltService({ LOG_LEVEL: 'error', RUN_MAX_ATTEMPTS: '1', ...env });

describe('a replica that dies mid-run', () => {
  const children: BuiltService[] = [];
  const survivors: TestApp[] = [];
  afterAll(async () => {
    children.forEach((c) => c.kill());
    for (const s of survivors) await s.close();
  });

  it('does not leave its thread busy: after the lease lapses the run is INTERRUPTED and the thread takes runs', async () => {
    const child = await spawnInstance({ RUN_LEASE_MS: '3000' });
    children.push(child);
    const runUrl = `${child.base}/run`;
    // Started before the kill: on a busy machine a start-up could outlast the lease.
    const survivor = await startApp({ RUN_LEASE_MS: '3000', RUN_MAX_ATTEMPTS: '1' });
    survivors.push(survivor);

    const threadId = uid('crash');
    const deadRun = uid('run');
    const live = await openRun(runUrl, {
      threadId,
      runId: deadRun,
      messages: [{ id: 'u1', role: 'user', content: '/slow 200 a b c d e f g h i j k l m n o p' }],
      tools: [],
      context: [],
      // A stored run holds its thread; a stateless one would hold none.
      forwardedProps: memoryOf(threadId),
    });
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    child.kill();
    await live.done.catch(() => undefined);

    const next = (n: number) => ({
      threadId,
      runId: uid(`after-${n}`),
      messages: [{ id: `n${n}`, role: 'user', content: 'still there?' }],
      tools: [],
      context: [],
      forwardedProps: memoryOf(threadId),
    });
    const busy = await postRun(survivor.runUrl, next(0));
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: 'THREAD_BUSY' });

    let attempt = 1;
    const accepted = await eventually(async () => {
      const res = await postRun(survivor.runUrl, next(attempt++));
      if (res.status === 200) return res.text();
      expect(res.status).toBe(409);
      await res.text();
      return undefined;
    }, 15_000);
    expect(accepted).toContain('RUN_FINISHED');
    const dead = await db((c) => c.query('SELECT status, error_code FROM runs WHERE id = $1', [deadRun]));
    expect(dead.rows[0]).toEqual({ status: 'error', error_code: 'INTERRUPTED' });
  }, 90_000);

  it('keeps the text a killed instance had shown: checkpointed while streaming, stored interrupted when reaped', async () => {
    const child = await spawnInstance({ RUN_LEASE_MS: '3000' });
    children.push(child);
    const threadId = uid('crash');
    const userId = uid('msg');
    const input = {
      threadId,
      runId: uid('run'),
      messages: [{ id: userId, role: 'user', content: '/slow 3000 one two three four five' }],
      tools: [],
      context: [],
      forwardedProps: { memoryOptions: {} },
    };
    const live = await openRun(`${child.base}/run`, input);
    // Deltas "You " and "said: ": the next one is 3 s away, three checkpoint periods.
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT' && e.delta.endsWith('said: '), 15_000);
    const shown = shownText(live.frames);
    expect(shown).toBe('You said: ');
    const messageId = live.frames.find((f) => f.event.type === 'TEXT_MESSAGE_START')!.event.messageId;
    await eventually(async () => {
      const { rows } = await db((c) => c.query('SELECT checkpoint FROM runs WHERE id = $1', [input.runId]));
      // The checkpoint holds what was shown placed into the thread's rows (mastra-rows.ts).
      const saved = rows[0]?.checkpoint as Placed | null | undefined;
      const messages = (saved?.rows ?? []).flatMap((row) => messagesOf({ ...row, createdAt: new Date() }));
      return messages.some((m) => m.id === messageId && m.content === shown) ? true : undefined;
    });
    child.kill();
    await live.done.catch(() => undefined);
    // Nothing more reached the client before the kill: `shown` is all it saw.
    expect(shownText(live.frames)).toBe(shown);

    const survivor = await startApp({ RUN_LEASE_MS: '3000', RUN_MAX_ATTEMPTS: '1' });
    survivors.push(survivor);
    const dead = await eventually(async () => {
      const row = await runRow(input.runId);
      return row?.status === 'error' ? row : undefined;
    }, 15_000);
    expect(dead).toMatchObject({ error_code: 'INTERRUPTED' });
    const res = await fetch(`${survivor.baseUrl}/io-bridge/threads/${threadId}/messages?format=agui`);
    expect(res.status).toBe(200);
    const { messages } = (await res.json()) as { messages: Array<Record<string, unknown>> };
    expect(messages).toEqual([
      expect.objectContaining({ id: userId, role: 'user' }),
      expect.objectContaining({
        id: messageId,
        role: 'assistant',
        content: shown,
        metadata: { interrupted: true },
      }),
    ]);
  }, 90_000);

  it('never lets an id a client saw name another event: a client that saw text just before the kill rejoins and gets its continuation', async () => {
    const [doomed, survivor] = await Promise.all([
      spawnInstance({ RUN_LEASE_MS: '3000' }),
      spawnInstance({ RUN_LEASE_MS: '3000' }),
    ]);
    children.push(doomed, survivor);
    const threadId = uid('crash');
    const input = {
      threadId,
      runId: uid('run'),
      messages: [{ id: uid('msg'), role: 'user', content: '/slow 2000 one two three' }],
      tools: [],
      context: [],
      forwardedProps: memoryOf(threadId),
    };
    const live = await openRun(`${doomed.base}/run`, input);
    // Killed the moment the first words arrive: nothing after them was produced, and nothing may be lost.
    await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    doomed.kill();
    await live.done.catch(() => undefined);
    const seen: Frame[] = [...live.frames];
    const last = seen.at(-1)!.id;

    const eventsUrl = `${survivor.base}/runs/${encodeURIComponent(input.runId)}/events`;
    const rejoined = await readRun(
      await fetch(eventsUrl, { headers: { accept: 'text/event-stream', 'last-event-id': String(last) } }),
      20_000,
    );
    expect(rejoined.res.status).toBe(200);
    const rest = await rejoined.done;
    expect(rest[0]?.id).toBe(last + 1);
    const whole = [...seen, ...rest];
    assertStreamRules(whole, input);
    const messageId = seen.find((f) => f.event.type === 'TEXT_MESSAGE_START')!.event.messageId;
    expect(rest.map((f) => f.event)).toContainEqual(
      expect.objectContaining({ type: 'TEXT_MESSAGE_END', messageId }),
    );

    // Every reader gets the same log, and each id the first client saw names the event it saw.
    const replay = await readRun(await fetch(eventsUrl, { headers: { accept: 'text/event-stream' } }));
    expect(replay.res.status).toBe(200);
    const all = await replay.done;
    expect(all.slice(0, seen.length)).toEqual(seen);
    expect(all).toEqual(whole);
  }, 90_000);
});
