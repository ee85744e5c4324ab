import {
  HttpAgent,
  runHttpRequest,
  transformHttpEventStream,
  verifyEvents,
  type BaseEvent,
} from '@ag-ui/client';
import { from } from 'rxjs';
import { connect } from 'node:net';
import { eventually, runRow } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { Event, Frame, memoryOf, openRun, runInput, uid } from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/** One event of a thread's stream: its id is `<run>:<seq>`. */
type ThreadFrame = { run: number; seq: number; event: Event };

/** A thread's stream read as it comes: its frames, and a wait for one of them or for a heartbeat. */
type ThreadStream = {
  res: Response;
  frames: ThreadFrame[];
  raw: () => string;
  waitFor: (predicate: (f: ThreadFrame) => boolean, timeoutMs?: number) => Promise<ThreadFrame>;
  /** Resolves once a `: ping` came after the frames seen now: the stream is open and idle. */
  idleAfter: (count: number) => Promise<void>;
  close: () => void;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
};

/** GET /threads/:threadId/events, read strictly: `id: <run>:<seq>` and `data:` frames, `: ping` comments. */
async function followThread(
  base: string,
  threadId: string,
  headers: Record<string, string> = {},
  query = '',
): Promise<ThreadStream> {
  const controller = new AbortController();
  const res = await fetch(`${base}/threads/${encodeURIComponent(threadId)}/events${query}`, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const frames: ThreadFrame[] = [];
  /** After how many frames each ping came. */
  const pings: number[] = [];
  let text = '';
  const listeners = new Set<() => void>();
  let ended: Promise<void> = Promise.resolve();
  if (res.status === 200) {
    ended = (async () => {
      const decoder = new TextDecoder('utf-8', { fatal: true });
      const reader = res.body!.getReader();
      let parsed = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        for (let end = text.indexOf('\n\n', parsed); end >= 0; end = text.indexOf('\n\n', parsed)) {
          const block = text.slice(parsed, end);
          parsed = end + 2;
          if (block === ': ping') {
            pings.push(frames.length);
            continue;
          }
          const m = /^id: (\d+):(\d+)\ndata: (.+)$/.exec(block);
          if (!m) throw new Error(`malformed frame: ${JSON.stringify(block)}`);
          frames.push({ run: Number(m[1]), seq: Number(m[2]), event: JSON.parse(m[3]) as Event });
        }
        listeners.forEach((l) => l());
      }
    })();
    ended.catch(() => undefined);
  }
  const until = (check: () => boolean, what: () => string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const listener = () => {
        if (!check()) return;
        listeners.delete(listener);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`not seen within ${timeoutMs} ms: ${what()}`));
      }, timeoutMs);
      listeners.add(listener);
      listener();
    });
  return {
    res,
    frames,
    raw: () => text,
    waitFor: async (predicate, timeoutMs = 15_000) => {
      await until(
        () => frames.some(predicate),
        () => `saw ${frames.map((f) => `${f.run}:${f.seq} ${f.event.type}`).join(', ')}`,
        timeoutMs,
      );
      return frames.find(predicate)!;
    },
    idleAfter: (count) =>
      until(
        () => pings.some((at) => at >= count),
        () => `a ping after ${count} frames`,
        15_000,
      ),
    close: () => controller.abort(),
    ended,
  };
}

const isEnd = (e: Event) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR';
const WORDS = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');

/**
 * Following a thread across runs (docs/protocol.md#following-a-thread): GET /threads/:threadId/events, on two
 * instances of the built service on one database.
 */
describe('following a thread (GET /threads/:threadId/events)', () => {
  let a: BuiltService;
  let b: BuiltService;
  const streams: ThreadStream[] = [];
  const follow = async (...args: Parameters<typeof followThread>) => {
    const stream = await followThread(...args);
    streams.push(stream);
    return stream;
  };

  beforeAll(async () => {
    // One after the other: the first migrates the fresh database.
    a = await startBuiltService({ HEARTBEAT_MS: '300', LOG_LEVEL: 'error' });
    // A drain of b (the last test) lasts while b's own runs get their grace.
    b = await startBuiltService({ HEARTBEAT_MS: '300', LOG_LEVEL: 'error', SHUTDOWN_GRACE_MS: '3000' });
  }, 120_000);
  afterAll(async () => {
    streams.forEach((s) => s.close());
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** A stored run on `threadId`, its deltas `ms` apart. */
  const turn = (threadId: string, text: string, ms = 60) =>
    runInput(`/slow ${ms} ${text}`, { threadId, forwardedProps: memoryOf(threadId) });

  it('a second tab, on this instance and on another, sees the first tab’s run from RUN_STARTED to its end, then the next run, and stays open', async () => {
    const threadId = uid('followed');
    // Slow enough to be joined mid-run on a loaded machine.
    const first = turn(threadId, WORDS, 250);
    const tab1 = await openRun(`${a.base}/run`, first);
    await tab1.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    // Joined mid-run: the active run from its first event.
    const [here, there] = await Promise.all([follow(a.base, threadId), follow(b.base, threadId)]);
    expect(here.res.status).toBe(200);
    expect(here.res.headers.get('content-type')).toBe('text/event-stream');
    const original = await tab1.done;
    for (const tab of [here, there]) {
      await tab.waitFor((f) => f.run === 1 && isEnd(f.event));
      const run1 = tab.frames.filter((f) => f.run === 1);
      expect(run1.map((f) => f.seq)).toEqual(original.map((f) => f.id));
      expect(run1.map((f) => f.event)).toEqual(original.map((f) => f.event));
    }

    // The next run, sent from the first tab to the other instance, reaches both.
    const second = turn(threadId, 'and again');
    const next = await openRun(`${b.base}/run`, second);
    const secondFrames = await next.done;
    for (const tab of [here, there]) {
      await tab.waitFor((f) => f.run === 2 && isEnd(f.event));
      const run2 = tab.frames.filter((f) => f.run === 2);
      expect(run2.map((f) => f.event)).toEqual(secondFrames.map((f) => f.event));
      expect(run2[0].event).toMatchObject({ type: 'RUN_STARTED', runId: second.runId });
      const asFrames: Frame[] = run2.map((f) => ({ id: f.seq, event: f.event }));
      assertStreamRules(asFrames, second);
      // Open after the terminal event: a heartbeat comes, the stream waits for the next run.
      await tab.idleAfter(tab.frames.length);
      // Two runs in one stream are what @ag-ui/client 1.0's verifier accepts.
      const verified = await new Promise<number>((resolve, reject) => {
        let count = 0;
        // @ag-ui/client has its own copy of rxjs: its operator takes its own Observable type.
        verifyEvents()(from(tab.frames.map((f) => f.event as BaseEvent)) as never).subscribe({
          next: () => count++,
          error: reject,
          complete: () => resolve(count),
        });
      });
      expect(verified).toBe(tab.frames.length);
    }
  }, 60_000);

  it('a follower that starts between runs gets the next run; one resumed with Last-Event-ID mid-run gets exactly the rest, then the next run', async () => {
    const threadId = uid('resumed');
    const warmUp = await openRun(`${a.base}/run`, turn(threadId, 'hello', 1));
    await warmUp.done;
    const waiting = await follow(b.base, threadId);
    const first = turn(threadId, WORDS);
    const original = await openRun(`${a.base}/run`, first);
    // The thread's second run: the first ended before anyone followed.
    const sixth = await waiting.waitFor((f) => f.run === 2 && f.seq === 6);
    expect(waiting.frames[0]).toMatchObject({ run: 2, seq: 1, event: { type: 'RUN_STARTED' } });
    waiting.close();
    expect(sixth.event).toBeDefined();

    for (const [t, headers, query] of [
      [b, { 'last-event-id': '2:6' }, ''],
      [a, {}, '?after=2:6'],
    ] as const) {
      const rejoined = await follow(t.base, threadId, headers, query);
      await rejoined.waitFor((f) => f.run === 2 && isEnd(f.event));
      const all = await original.done;
      expect(rejoined.frames.map((f) => `${f.run}:${f.seq}`)).toEqual(all.slice(6).map((f) => `2:${f.id}`));
      expect(rejoined.frames.map((f) => f.event)).toEqual(all.slice(6).map((f) => f.event));
    }
    const third = turn(threadId, 'three');
    const last = await openRun(`${b.base}/run`, third);
    await last.done;
    for (const s of streams.slice(-2)) {
      const end = await s.waitFor((f) => f.run === 3 && isEnd(f.event));
      expect(end.event).toMatchObject({ type: 'RUN_FINISHED', runId: third.runId });
    }
  }, 60_000);

  it('another owner’s thread or an unknown one is 404, a bad Last-Event-ID 400, in the error envelope', async () => {
    const threadId = uid('owned');
    const input = runInput('hi', { threadId, forwardedProps: memoryOf(threadId, 'alice') });
    await (
      await openRun(`${a.base}/run`, input)
    ).done;
    const status = async (t: BuiltService, id: string, headers: Record<string, string> = {}, q = '') => {
      const res = await fetch(`${t.base}/threads/${encodeURIComponent(id)}/events${q}`, { headers });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    for (const t of [a, b]) {
      expect(await status(t, threadId, { 'x-resource-id': 'bob' })).toMatchObject({
        status: 404,
        body: { statusCode: 404, code: 'NOT_FOUND' },
      });
      expect(await status(t, uid('none'), { 'x-resource-id': 'alice' })).toMatchObject({ status: 404 });
      for (const bad of ['5', '0:3', '1:-1', 'a:b', '1:2:3', '']) {
        expect(await status(t, threadId, { 'x-resource-id': 'alice', 'last-event-id': bad })).toMatchObject({
          status: 400,
          body: { code: 'VALIDATION_FAILED' },
        });
      }
      expect(await status(t, threadId, { 'x-resource-id': 'alice' }, '?after=x')).toMatchObject({
        status: 400,
      });
    }
    // The owner follows it: its only run, replayed from the id given.
    const own = await follow(b.base, threadId, { 'x-resource-id': 'alice', 'last-event-id': '1:0' });
    await own.waitFor((f) => isEnd(f.event));
    expect(own.frames[0]).toMatchObject({
      run: 1,
      seq: 1,
      event: { type: 'RUN_STARTED', runId: input.runId },
    });
  }, 30_000);

  it('counts as a reader: at most MAX_READERS_PER_RUN streams of one thread per instance (429 before any header), freed on close', async () => {
    const threadId = uid('capped');
    await (
      await openRun(`${a.base}/run`, turn(threadId, 'hi', 1))
    ).done;
    // The default cap per run (and so per thread) is 10.
    const open = await Promise.all(Array.from({ length: 10 }, () => follow(a.base, threadId)));
    expect(open.map((s) => s.res.status)).toEqual(Array(10).fill(200));
    const refused = await followThread(a.base, threadId);
    expect(refused.res.status).toBe(429);
    expect(await refused.res.json()).toMatchObject({ statusCode: 429, code: 'TOO_MANY_READERS' });
    open[0].close();
    const again = await eventually(async () => {
      const s = await followThread(a.base, threadId);
      if (s.res.status === 200) return s;
      await s.res.arrayBuffer();
      return undefined;
    });
    streams.push(again);
  }, 30_000);

  it('@ag-ui/client 1.0: an HttpAgent whose connect() reads the thread stream rebuilds the answers of every run, live', async () => {
    const threadId = uid('agent');
    /** Stock HttpAgent posts runs only; connectAgent() reads whatever connect() returns, here the thread. */
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => (opened = resolve));
    class ThreadFollower extends HttpAgent {
      protected override connect() {
        return transformHttpEventStream(
          runHttpRequest(async () => {
            const res = await fetch(this.url, {
              headers: { accept: 'text/event-stream' },
              signal: this.abortController.signal,
            });
            opened();
            return res;
          }),
        );
      }
    }
    const follower = new ThreadFollower({
      url: `${b.base}/threads/${encodeURIComponent(threadId)}/events`,
      threadId,
    });
    const answers = () => follower.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    await (
      await openRun(`${a.base}/run`, turn(threadId, 'hello', 1))
    ).done;
    const errors: unknown[] = [];
    const connected = follower.connectAgent({}, { onRunErrorEvent: ({ event }) => void errors.push(event) });
    // Joined between runs (the headers come once the stream knows where it starts): it gets the next two.
    await open;
    await (
      await openRun(`${a.base}/run`, turn(threadId, 'first question'))
    ).done;
    await (
      await openRun(`${b.base}/run`, turn(threadId, 'second question'))
    ).done;
    await eventually(() => Promise.resolve(answers().length === 2 || undefined), 15_000);
    expect(answers()).toEqual(['You said: first question', 'You said: second question']);
    expect(errors).toEqual([]);
    // The client closes the stream (it reports its own abort as a RUN_ERROR of code `abort`).
    follower.abortRun();
    await connected;
  }, 30_000);

  it('ends when the thread is deleted; a client that asked for Connection: close is told so and its connection closed', async () => {
    const threadId = uid('deleted');
    await (
      await openRun(`${a.base}/run`, turn(threadId, 'hi', 1))
    ).done;
    const url = new URL(b.base);
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('error', () => undefined);
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      `GET ${url.pathname}/threads/${encodeURIComponent(threadId)}/events HTTP/1.1\r\n` +
        `Host: ${url.host}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`,
    );
    const viaFetch = await follow(a.base, threadId);
    await eventually(() => Promise.resolve(text.includes('\r\n\r\n') || undefined));
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text.toLowerCase()).toContain('\r\nconnection: close\r\n');
    // Deleted through the other instance: both streams end.
    const deleted = await fetch(`${a.base}/threads/${encodeURIComponent(threadId)}`, { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    await Promise.all([closed, viaFetch.ended]);
  }, 30_000);

  // Last: it stops instance b.
  it('a draining instance closes its thread streams, waiting or following a run elsewhere: the client reconnects with its last id', async () => {
    const idle = uid('idle');
    await (
      await openRun(`${a.base}/run`, turn(idle, 'hi', 1))
    ).done;
    const busy = uid('busy');
    // Answering until cancelled.
    const long = runInput('/slow 60000 a b c', { threadId: busy, forwardedProps: memoryOf(busy) });
    const active = await openRun(`${a.base}/run`, long);
    const [waiting, reading] = [await follow(b.base, idle), await follow(b.base, busy)];
    await reading.waitFor((f) => f.event.type === 'RUN_STARTED');
    // A run of b's own keeps b draining (SHUTDOWN_GRACE_MS) after its followers were closed.
    const ownInput = runInput('/slow 60000 a b c');
    const own = await openRun(`${b.base}/run`, ownInput);
    await own.waitFor((e) => e.type === 'RUN_STARTED');
    const stopped = b.stop();
    await Promise.all([waiting.ended, reading.ended]);
    expect(own.frames.some((f) => isEnd(f.event))).toBe(false);
    await stopped;
    // Handed over (docs/durable-runs.md#drain-handing-runs-over): its stream here ends RUN_MOVED, the run
    // goes on on a; stopped there.
    expect((await own.done).at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'RUN_MOVED' });
    await eventually(async () => {
      await fetch(`${a.base}/runs/${encodeURIComponent(ownInput.runId)}/cancel`, { method: 'POST' });
      return (await runRow(ownInput.runId))?.status === 'running' ? undefined : true;
    }, 15_000);
    // The run itself goes on on its instance; the client resumes there.
    const resumed = await follow(a.base, busy, { 'last-event-id': `1:${reading.frames.at(-1)!.seq}` });
    expect(
      (await fetch(`${a.base}/runs/${encodeURIComponent(long.runId)}/cancel`, { method: 'POST' })).status,
    ).toBe(202);
    const end = await resumed.waitFor((f) => isEnd(f.event));
    expect(end.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    expect(resumed.frames[0].seq).toBe(reading.frames.at(-1)!.seq + 1);
    await active.done;
  }, 60_000);
});
