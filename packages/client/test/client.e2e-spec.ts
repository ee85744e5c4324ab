import { randomUUID } from 'node:crypto';
import { EventType, IoBridgeClient, IoBridgeError, type AGUIEvent, type RunRequest } from '@io-bridge/client';
import { startBuiltService, type BuiltService } from '../../../test/support/built-service';
import { dbProxy, type DbProxy } from '../../../test/support/db-proxy';

/**
 * The typed client against the built service over real HTTP: runs as async iterables, frontend tool
 * results, cancel, rejoin after a dropped connection, threads and agents.
 */

const id = (prefix: string) => `${prefix}-${randomUUID()}`;
const request = (text: string, extra: Partial<RunRequest> = {}): RunRequest => {
  const threadId = id('thread');
  return {
    threadId,
    runId: id('run'),
    messages: [{ id: id('msg'), role: 'user', content: text }],
    forwardedProps: { memory: { thread: threadId } },
    ...extra,
  };
};
const text = (events: AGUIEvent[]) =>
  events.map((e) => (e.type === EventType.TEXT_MESSAGE_CONTENT ? e.delta : '')).join('');

describe('@io-bridge/client', () => {
  let service: BuiltService;
  let client: IoBridgeClient;

  beforeAll(async () => {
    service = await startBuiltService();
  }, 90_000);
  afterAll(async () => {
    await service?.stop();
  });
  beforeEach(() => {
    client = new IoBridgeClient({ baseUrl: service.base, resourceId: id('owner') });
  });

  it('lists the agents with their server tools', async () => {
    const { agents, defaultAgentId } = await client.agents();
    const assistant = agents.find((a) => a.id === 'assistant');
    expect(defaultAgentId).toBe('assistant');
    expect(assistant?.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['calculate', 'current_time']),
    );
    expect((await client.agent('calculator')).id).toBe('calculator');
    await expect(client.agent('nobody')).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
  });

  it('streams a run as typed events, RUN_STARTED first and RUN_FINISHED last, each id once', async () => {
    const stream = client.run(request('hello typed client'));
    const events: AGUIEvent[] = [];
    const ids: number[] = [];
    for await (const event of stream) {
      events.push(event);
      ids.push(stream.lastEventId);
    }
    expect(events[0].type).toBe(EventType.RUN_STARTED);
    expect(events.at(-1)!.type).toBe(EventType.RUN_FINISHED);
    expect(ids).toEqual(events.map((_, i) => i + 1));
    expect(text(events)).toBe('You said: hello typed client');
    expect(stream.rejoins).toBe(0);
  });

  it('runs a server tool and shows its result', async () => {
    const events: AGUIEvent[] = [];
    for await (const event of client.run(request('/tool calculate {"expression":"6*7"}'))) events.push(event);
    const start = events.find((e) => e.type === EventType.TOOL_CALL_START);
    const result = events.find((e) => e.type === EventType.TOOL_CALL_RESULT);
    expect(start).toMatchObject({ toolCallName: 'calculate' });
    expect(result?.type === EventType.TOOL_CALL_RESULT && JSON.parse(result.content as string)).toMatchObject(
      {
        result: 42,
      },
    );
  });

  it('answers a frontend tool call inside the run', async () => {
    const input = request('/tool roll_die {"sides":6}', {
      tools: [{ name: 'roll_die', description: 'Rolls a die', parameters: { type: 'object' } }],
    });
    const events: AGUIEvent[] = [];
    for await (const event of client.run(input)) {
      events.push(event);
      if (event.type === EventType.TOOL_CALL_END)
        await expect(
          client.submitToolResult(input.runId, event.toolCallId, { content: { rolled: 4 } }),
        ).resolves.toEqual({ accepted: true });
    }
    expect(events.at(-1)!.type).toBe(EventType.RUN_FINISHED);
    expect(text(events)).toContain('"rolled":4');
    const run = await client.getRun(input.runId);
    expect(run).toMatchObject({ id: input.runId, status: 'finished', pendingToolCalls: [] });
  });

  it('cancels a run: its stream ends with RUN_ERROR CANCELLED', async () => {
    const input = request(`/slow 200 ${'word '.repeat(40)}`);
    const events: AGUIEvent[] = [];
    for await (const event of client.run(input)) {
      events.push(event);
      if (event.type === EventType.TEXT_MESSAGE_START) await client.cancel(input.runId);
    }
    expect(events.at(-1)).toMatchObject({ type: EventType.RUN_ERROR, code: 'CANCELLED' });
    expect((await client.getRun(input.runId)).status).toBe('cancelled');
    await expect(client.cancel(input.runId)).rejects.toMatchObject({
      statusCode: 409,
      code: 'RUN_NOT_ACTIVE',
    });
  });

  describe('through a connection that drops', () => {
    let proxy: DbProxy;
    beforeAll(async () => {
      proxy = await dbProxy(new URL(service.origin));
    });
    afterAll(async () => {
      await proxy?.close();
    });

    it('rejoins with Last-Event-ID by itself and yields every event exactly once', async () => {
      const viaProxy = new IoBridgeClient({
        baseUrl: `${proxy.url.replace(/\/$/, '')}/io-bridge`,
        resourceId: id('owner'),
        rejoin: { delayMs: 50 },
      });
      const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
      const input = request(`/slow 60 ${words}`);
      const stream = viaProxy.run(input);
      const events: AGUIEvent[] = [];
      const ids: number[] = [];
      for await (const event of stream) {
        events.push(event);
        ids.push(stream.lastEventId);
        // Mid-run, every connection through the proxy is cut; new ones go through again.
        if (events.length === 4) {
          await proxy.stop();
          await proxy.resume();
        }
      }
      expect(stream.rejoins).toBeGreaterThanOrEqual(1);
      expect(ids).toEqual(events.map((_, i) => i + 1));
      expect(events[0].type).toBe(EventType.RUN_STARTED);
      expect(events.filter((e) => e.type === EventType.RUN_STARTED)).toHaveLength(1);
      expect(events.at(-1)!.type).toBe(EventType.RUN_FINISHED);
      expect(text(events)).toBe(`You said: ${words}`);

      // A later join replays the same events.
      const replay: AGUIEvent[] = [];
      for await (const event of viaProxy.join(input.runId)) replay.push(event);
      expect(replay).toEqual(events);
    });

    it('a join and a thread follow rejoin by themselves too, while reconnecting is refused for a while', async () => {
      const owner = id('owner');
      const direct = new IoBridgeClient({ baseUrl: service.base, resourceId: owner });
      const viaProxy = new IoBridgeClient({
        baseUrl: `${proxy.url.replace(/\/$/, '')}/io-bridge`,
        resourceId: owner,
        rejoin: { delayMs: 100 },
      });
      const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
      const input = request(`/slow 80 ${words}`);
      const all: AGUIEvent[] = [];
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const run = (async () => {
        for await (const event of direct.run(input)) {
          all.push(event);
          started();
        }
      })();
      // Joined once the run exists; a follow takes the active run from its RUN_STARTED.
      await running;
      const follow = new AbortController();
      const followed: AGUIEvent[] = [];
      const thread = viaProxy.threads.follow(input.threadId, { signal: follow.signal });
      const following = (async () => {
        for await (const event of thread) {
          followed.push(event);
          if (event.type === EventType.RUN_FINISHED) follow.abort();
        }
      })();
      const joined: AGUIEvent[] = [];
      const join = viaProxy.join(input.runId);
      for await (const event of join) {
        joined.push(event);
        // Every connection through the proxy is cut, and new ones are refused for a while.
        if (joined.length === 4) {
          await proxy.stop();
          setTimeout(() => void proxy.resume(), 300);
        }
      }
      await run;
      await following;
      expect(join.rejoins).toBeGreaterThanOrEqual(1);
      expect(joined).toEqual(all);
      expect(thread.rejoins).toBeGreaterThanOrEqual(1);
      expect(followed).toEqual(all);
    });

    it('gives up with CONNECTION_LOST when the service stays unreachable', async () => {
      const viaProxy = new IoBridgeClient({
        baseUrl: `${proxy.url.replace(/\/$/, '')}/io-bridge`,
        resourceId: id('owner'),
        rejoin: { delayMs: 10, attempts: 2 },
      });
      const input = request(`/slow 100 ${'word '.repeat(30)}`);
      const seen: AGUIEvent[] = [];
      const read = (async () => {
        for await (const event of viaProxy.run(input)) {
          seen.push(event);
          if (seen.length === 3) await proxy.stop();
        }
      })();
      await expect(read).rejects.toMatchObject({ code: 'CONNECTION_LOST' });
      await proxy.resume();
      await client.cancel(input.runId).catch(() => undefined);
    });
  });

  it('joins a finished run from an event id: only what follows it', async () => {
    const input = request('replay me please');
    const all: AGUIEvent[] = [];
    for await (const event of client.run(input)) all.push(event);
    const rest: AGUIEvent[] = [];
    for await (const event of client.join(input.runId, { after: 2 })) rest.push(event);
    expect(rest).toEqual(all.slice(2));
  });

  it('follows a thread across runs, ids <run>:<seq>, until aborted; an unknown thread is a 404', async () => {
    const first = request('one');
    const threadId = first.threadId;
    const opening = client.run(first);
    for await (const event of opening) void event;
    const next = [2, 3].map((n) => request(`turn ${n}`, { threadId, forwardedProps: first.forwardedProps }));
    const stop = new AbortController();
    // From the end of the first run: the later runs, whenever the follow's request gets there.
    const follower = client.threads.follow(threadId, {
      signal: stop.signal,
      after: `1:${opening.lastEventId}`,
    });
    const seen: AGUIEvent[] = [];
    const ids: string[] = [];
    const reading = (async () => {
      for await (const event of follower) {
        seen.push(event);
        ids.push(follower.lastEventId!);
        if (seen.filter((e) => e.type === EventType.RUN_FINISHED).length === 2) stop.abort();
      }
    })();
    const runs: AGUIEvent[][] = [];
    for (const input of next) {
      const events: AGUIEvent[] = [];
      for await (const event of client.run(input)) events.push(event);
      runs.push(events);
    }
    await reading;
    expect(seen).toEqual([...runs[0], ...runs[1]]);
    expect(ids).toEqual([...runs[0].map((_, i) => `2:${i + 1}`), ...runs[1].map((_, i) => `3:${i + 1}`)]);
    expect(follower.rejoins).toBe(0);

    const unknown = client.threads.follow(id('nobody'));
    await expect(
      (async () => {
        for await (const event of unknown) void event;
      })(),
    ).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
  });

  it('refuses a bad run with the error envelope, before any stream', async () => {
    const bad = request('x', { messages: [{ id: '', role: 'user', content: 'x' }] });
    const error: unknown = await (async () => {
      for await (const _ of client.run(bad)) return undefined;
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IoBridgeError);
    expect(error).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
  });

  it('creates, lists, renames, reads and deletes threads', async () => {
    const thread = await client.threads.create({ title: 'First', agentId: 'assistant' });
    expect(thread).toMatchObject({ title: 'First', agentId: 'assistant', metadata: {} });
    const input = request('remember this', {
      threadId: thread.id,
      forwardedProps: { memory: { thread: thread.id } },
    });
    for await (const _ of client.run(input)) void _;
    const { threads, nextCursor } = await client.threads.list({ limit: 10 });
    expect(threads.map((t) => t.id)).toEqual([thread.id]);
    expect(nextCursor).toBeNull();
    expect((await client.threads.rename(thread.id, 'Renamed')).title).toBe('Renamed');
    expect((await client.threads.get(thread.id)).title).toBe('Renamed');
    const { messages } = await client.threads.messages(thread.id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1].content.parts).toContainEqual({ type: 'text', text: 'You said: remember this' });
    const agui = await client.threads.aguiMessages(thread.id);
    expect(agui.messages[0]).toMatchObject({ role: 'user', content: 'remember this' });
    await expect(client.threads.delete(thread.id)).resolves.toBeUndefined();
    await expect(client.threads.get(thread.id)).rejects.toMatchObject({ statusCode: 404, code: 'NOT_FOUND' });
    // Another owner's client sees nothing of it.
    const other = new IoBridgeClient({ baseUrl: service.base, resourceId: id('owner') });
    expect((await other.threads.list()).threads).toEqual([]);
  });
});
