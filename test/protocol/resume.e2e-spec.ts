import { connect } from 'node:net';
import { RunEventsRepository } from '../../src/runs/storage/run-events.repository';
import { db, endedRunRow, eventually, runRow, startApp, storedMessages, TestApp } from '../support/app';
import { launchChromium } from '../support/chromium';
import {
  Frame,
  memoryOf,
  openRun,
  parseFrames,
  postRun,
  readRun,
  runInput,
  shownText,
  types,
} from '../support/sse';
import { assertStreamRules } from '../support/stream-rules';

/**
 * Resumable runs (docs/protocol.md#rejoining-a-run): GET /runs/:runId/events rejoins a run's stream on any
 * instance. Two instances share the database; a run on one is rejoined on the other.
 */

const PINGS = /: ping\n\n/g;
/** A run's bytes without heartbeats (which differ between readers by when they came). */
const withoutPings = (raw: string) => raw.replace(PINGS, '');
const WORDS = Array.from({ length: 16 }, (_, i) => `w${i}`).join(' ');

describe('resumable runs (GET /runs/:runId/events)', () => {
  let a: TestApp;
  let b: TestApp;
  const eventsUrl = (t: TestApp, runId: string, query = '') =>
    `${t.baseUrl}/io-bridge/runs/${encodeURIComponent(runId)}/events${query}`;
  const join = async (t: TestApp, runId: string, headers: Record<string, string> = {}, query = '') =>
    readRun(
      await fetch(eventsUrl(t, runId, query), { headers: { accept: 'text/event-stream', ...headers } }),
    );

  beforeAll(async () => {
    // One after the other: the first migrates the fresh database.
    a = await startApp({ HEARTBEAT_MS: '10000' });
    b = await startApp({ HEARTBEAT_MS: '50' });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it('a client that read five events and dropped rejoins on the other instance with Last-Event-ID: 5 and gets exactly 6…terminal', async () => {
    const input = runInput(`/slow 40 ${WORDS}`, { forwardedProps: { disconnectGraceMs: 10_000 } });
    const dropped = new AbortController();
    const first = await readRun(await postRun(a.runUrl, input, { signal: dropped.signal }));
    await eventually(() => Promise.resolve(first.frames.length >= 5 ? true : undefined));
    const firstFive = parseFrames(
      withoutPings(first.raw()).split('\n\n').slice(0, 5).join('\n\n') + '\n\n',
    ).frames;
    dropped.abort();
    await first.done.catch(() => undefined);

    const rejoined = await join(b, input.runId, { 'last-event-id': '5' });
    expect(rejoined.res.status).toBe(200);
    expect(rejoined.res.headers.get('content-type')).toBe('text/event-stream');
    const rest = await rejoined.done;
    expect(rest[0].id).toBe(6);
    expect(rest.map((f) => f.id)).toEqual(rest.map((_, i) => 6 + i));
    expect(rest.at(-1)!.event.type).toBe('RUN_FINISHED');
    const whole: Frame[] = [...firstFive.map((f, i) => ({ ...f, id: i + 1 })), ...rest];
    assertStreamRules(whole, input);
    expect(shownText(whole)).toBe(`You said: ${WORDS}`);
    expect((await runRow(input.runId))?.status).toBe('finished');

    // The replay on either instance is those same bytes.
    const replay = await join(a, input.runId);
    await replay.done;
    expect(withoutPings(replay.raw())).toBe(
      withoutPings(first.raw()).split('\n\n').slice(0, 5).join('\n\n') +
        '\n\n' +
        withoutPings(rejoined.raw()),
    );
  });

  it('a rejoin of a run that waits sends its headers at once, not with the next event or heartbeat', async () => {
    const input = runInput('/tool pick {}', {
      tools: [{ name: 'pick', description: 'pick one', parameters: { type: 'object', properties: {} } }],
    });
    const live = await openRun(a.runUrl, input);
    const call = await live.waitFor((e) => e.type === 'TOOL_CALL_END', 15_000);
    const last = live.frames.at(-1)!.id;
    // Nothing new to send: the run waits for the browser, and a's heartbeat is 10 s away. Before,
    // the headers waited for it (the fetch below did not resolve).
    const res = await fetch(eventsUrl(a, input.runId), {
      headers: { accept: 'text/event-stream', 'last-event-id': String(last) },
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(200);
    const rest = await readRun(res);
    const posted = await fetch(
      `${a.baseUrl}/io-bridge/runs/${input.runId}/tool-calls/${call.toolCallId}/result`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'blue' }),
      },
    );
    expect(posted.status).toBe(202);
    const tail = await rest.done;
    expect(tail[0].id).toBe(last + 1);
    expect(types(tail)).toContain('TOOL_CALL_RESULT');
    expect(tail.at(-1)!.event.type).toBe('RUN_FINISHED');
    await live.done;
  });

  it('a second tab joins mid-run, on either instance, and gets the same bytes as the original stream', async () => {
    // Deltas 120 ms apart: quiet long enough for the 50 ms heartbeats of instance b.
    const input = runInput(`/slow 120 ${WORDS}`);
    const original = await openRun(a.runUrl, input);
    await original.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    const [here, there, fromThree] = await Promise.all([
      join(a, input.runId),
      join(b, input.runId),
      join(b, input.runId, {}, '?after=3'),
    ]);
    await Promise.all([original.done, here.done, there.done, fromThree.done]);
    const bytes = withoutPings(original.raw());
    expect(types(original.frames).at(-1)).toBe('RUN_FINISHED');
    expect(withoutPings(here.raw())).toBe(bytes);
    expect(withoutPings(there.raw())).toBe(bytes);
    expect(fromThree.frames[0].id).toBe(4);
    expect(bytes.endsWith(withoutPings(fromThree.raw()))).toBe(true);
    assertStreamRules(there.frames, input);
    // The joiner on the instance with 50 ms heartbeats got them while the run was quiet.
    expect(there.raw()).toMatch(PINGS);
  });

  it('a finished run replays whole on both instances, and Last-Event-ID wins over ?after', async () => {
    const input = runInput('/reason plan the day');
    const original = await openRun(a.runUrl, input);
    await original.done;
    for (const t of [a, b]) {
      const replay = await join(t, input.runId);
      await replay.done;
      expect(withoutPings(replay.raw())).toBe(withoutPings(original.raw()));
    }
    const last = original.frames.length;
    const tail = await join(b, input.runId, { 'last-event-id': String(last - 1) }, '?after=0');
    expect((await tail.done).map((f) => f.id)).toEqual([last]);
    // A client that has everything is told there is nothing more (204 stops an EventSource's reconnects).
    for (const t of [a, b]) {
      const none = await fetch(eventsUrl(t, input.runId), { headers: { 'last-event-id': String(last) } });
      expect(none.status).toBe(204);
      expect(await none.text()).toBe('');
    }
  });

  it('takes any event id up to 2^53 - 1 (past the end of an ended run: 204), and refuses larger ones with the error envelope', async () => {
    const input = runInput('hello');
    const original = await openRun(a.runUrl, input);
    await original.done;
    // Past 2^31 (a 32-bit integer) up to Number.MAX_SAFE_INTEGER: the client has everything.
    for (const id of ['2147483648', '4294967296', String(Number.MAX_SAFE_INTEGER)]) {
      for (const t of [a, b]) {
        const byHeader = await fetch(eventsUrl(t, input.runId), { headers: { 'last-event-id': id } });
        expect({ id, status: byHeader.status, body: await byHeader.text() }).toEqual({
          id,
          status: 204,
          body: '',
        });
        const byQuery = await fetch(eventsUrl(t, input.runId, `?after=${id}`));
        expect({ id, status: byQuery.status }).toEqual({ id, status: 204 });
      }
    }
    // Beyond what a JavaScript number holds exactly, fractions, negatives: 400 with the envelope.
    const bad = [String(2 ** 53), '9007199254740993', '99999999999999999999', '1e3', '-1', '1.5', '0x10'];
    for (const id of bad) {
      for (const [headers, query] of [
        [{ 'last-event-id': id }, ''],
        [{}, `?after=${encodeURIComponent(id)}`],
      ] as const) {
        const res = await fetch(eventsUrl(b, input.runId, query), { headers });
        expect({ id, status: res.status, body: await res.json() }).toMatchObject({
          id,
          status: 400,
          body: { statusCode: 400, code: 'VALIDATION_FAILED' },
        });
      }
    }
  });

  it('refuses what it cannot serve with the error envelope: unknown or foreign run 404, bad Last-Event-ID 400, expired 410', async () => {
    const input = runInput('hello', { forwardedProps: { resourceId: 'alice' } });
    const original = await openRun(a.runUrl, input);
    await original.done;

    const status = async (url: string, headers: Record<string, string> = {}) => {
      const res = await fetch(url, { headers });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect(await status(eventsUrl(b, 'no-such-run'))).toMatchObject({
      status: 404,
      body: { statusCode: 404, code: 'NOT_FOUND' },
    });
    expect(await status(eventsUrl(b, input.runId), { 'x-resource-id': 'bob' })).toMatchObject({
      status: 404,
      body: { code: 'NOT_FOUND' },
    });
    for (const bad of ['-1', 'abc', '1.5', '']) {
      expect(
        await status(eventsUrl(b, input.runId), { 'x-resource-id': 'alice', 'last-event-id': bad }),
      ).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    }
    expect(await status(eventsUrl(b, input.runId, '?after=x'))).toMatchObject({ status: 400 });
    const own = await join(b, input.runId, { 'x-resource-id': 'alice' });
    expect(withoutPings((await own.done, own.raw()))).toBe(withoutPings(original.raw()));

    // Ended longer ago than RUN_EVENTS_RETENTION_MS (15 minutes by default).
    await db((c) =>
      c.query(`UPDATE runs SET finished_at = now() - interval '16 minutes' WHERE id = $1`, [input.runId]),
    );
    expect(await status(eventsUrl(b, input.runId), { 'x-resource-id': 'alice' })).toMatchObject({
      status: 410,
      body: { statusCode: 410, code: 'RUN_EVENTS_EXPIRED' },
    });
  });

  it('the grace period keeps a dropped run alive, and a rejoin within it finishes the answer', async () => {
    const threadId = `thread-grace-${Date.now()}`;
    const input = runInput(`/slow 60 ${WORDS}`, {
      threadId,
      forwardedProps: { ...memoryOf(threadId), disconnectGraceMs: 5000 },
    });
    const dropped = new AbortController();
    const first = await readRun(await postRun(a.runUrl, input, { signal: dropped.signal }));
    await first.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    dropped.abort();
    await first.done.catch(() => undefined);
    // Still running well after the client left (a run without grace is cancelled at once).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await runRow(input.runId))?.status).toBe('running');

    const seen = first.frames.at(-1)!.id;
    const rejoined = await join(b, input.runId, { 'last-event-id': String(seen) });
    const rest = await rejoined.done;
    expect(rest[0].id).toBe(seen + 1);
    expect(rest.at(-1)!.event.type).toBe('RUN_FINISHED');
    expect(shownText([...first.frames, ...rest])).toBe(`You said: ${WORDS}`);
    expect((await endedRunRow(input.runId)).status).toBe('finished');
    const stored = await db((c) => storedMessages(c, threadId));
    expect(stored.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([
      `You said: ${WORDS}`,
    ]);
  });

  it('a dropped run nobody rejoins is cancelled when its grace ends, and its log ends with RUN_ERROR CANCELLED', async () => {
    const input = runInput(`/slow 100 ${WORDS}`, { forwardedProps: { disconnectGraceMs: 600 } });
    const dropped = new AbortController();
    const first = await readRun(await postRun(a.runUrl, input, { signal: dropped.signal }));
    await first.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    const left = Date.now();
    dropped.abort();
    await first.done.catch(() => undefined);
    const ended = await endedRunRow(input.runId);
    expect(Date.now() - left).toBeGreaterThanOrEqual(550);
    expect(ended).toMatchObject({ status: 'cancelled', error_code: 'CANCELLED' });
    const replay = await join(b, input.runId);
    const frames = await replay.done;
    assertStreamRules(frames, input);
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
  });

  it('without a grace period a disconnect still cancels at once, and an explicit cancel during a grace is immediate', async () => {
    const quick = runInput(`/slow 200 ${WORDS}`);
    const dropped = new AbortController();
    const first = await readRun(await postRun(a.runUrl, quick, { signal: dropped.signal }));
    await first.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    dropped.abort();
    expect((await endedRunRow(quick.runId)).status).toBe('cancelled');

    const graced = runInput(`/slow 200 ${WORDS}`, { forwardedProps: { disconnectGraceMs: 60_000 } });
    const gone = new AbortController();
    const second = await readRun(await postRun(a.runUrl, graced, { signal: gone.signal }));
    await second.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
    gone.abort();
    await second.done.catch(() => undefined);
    expect((await runRow(graced.runId))?.status).toBe('running');
    const watcher = await join(b, graced.runId);
    const res = await fetch(`${b.baseUrl}/io-bridge/runs/${graced.runId}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    const frames = await watcher.done;
    expect(frames.at(-1)!.event).toMatchObject({ type: 'RUN_ERROR', code: 'CANCELLED' });
    expect((await endedRunRow(graced.runId)).status).toBe('cancelled');
  });

  it('ends the log of a run whose instance died (ended INTERRUPTED by another) the same way for every reader', async () => {
    const runId = `run-orphan-${Date.now()}`;
    const threadId = `thread-orphan-${Date.now()}`;
    // Timestamps of a run that died ten seconds ago: the stream rules take epoch milliseconds near now.
    const t = Date.now() - 10_000;
    const events = [
      { type: 'RUN_STARTED', timestamp: t, threadId, runId },
      { type: 'STEP_STARTED', timestamp: t + 1, stepName: 'step-1' },
      { type: 'TEXT_MESSAGE_START', timestamp: t + 2, messageId: 'm1', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', timestamp: t + 3, messageId: 'm1', delta: 'Half an ans' },
    ];
    const frames = events.map((e, i) => `id: ${i + 1}\ndata: ${JSON.stringify(e)}\n\n`).join('');
    await db(async (c) => {
      await c.query(
        `INSERT INTO runs (id, thread_id, resource_id, agent_id, status, error_code, error_message, finished_at, stateless)
         VALUES ($1, $2, 'anonymous', 'assistant', 'error', 'INTERRUPTED', 'The instance running it stopped',
                 now() - interval '10 seconds', true)`,
        [runId, threadId],
      );
      await c.query(`INSERT INTO run_events (run_id, first_seq, last_seq, frames) VALUES ($1, 1, 4, $2)`, [
        runId,
        frames,
      ]);
    });
    const first = await join(b, runId);
    const got = await first.done;
    assertStreamRules(got, { threadId, runId });
    expect(types(got.slice(4))).toEqual(['TEXT_MESSAGE_END', 'STEP_FINISHED', 'RUN_ERROR']);
    expect(got.at(-1)!.event).toMatchObject({
      code: 'INTERRUPTED',
      message: 'The instance running it stopped',
    });
    const again = await join(a, runId);
    await again.done;
    expect(withoutPings(again.raw())).toBe(withoutPings(first.raw()));
  });

  it('deletes the logs of runs ended longer ago than the retention, and only those', async () => {
    const old = runInput('old run');
    const fresh = runInput('fresh run');
    await (
      await openRun(a.runUrl, old)
    ).done;
    await (
      await openRun(a.runUrl, fresh)
    ).done;
    const stored = (runId: string) =>
      db((c) => c.query('SELECT count(*)::int AS n FROM run_events WHERE run_id = $1', [runId])).then(
        (r) => r.rows[0].n as number,
      );
    await eventually(async () =>
      (await stored(old.runId)) > 0 && (await stored(fresh.runId)) > 0 ? true : undefined,
    );
    await db((c) =>
      c.query(`UPDATE runs SET finished_at = now() - interval '20 minutes' WHERE id = $1`, [old.runId]),
    );
    expect(await a.app.get(RunEventsRepository).deleteExpired(15 * 60_000)).toBeGreaterThan(0);
    expect(await stored(old.runId)).toBe(0);
    expect(await stored(fresh.runId)).toBeGreaterThan(0);
  });

  it('serves a stream too far behind a live run from storage, and it still gets every byte once', async () => {
    const slow = await startApp({
      STREAM_MAX_QUEUED_BYTES: '65536',
      MAX_BODY_BYTES: String(32 * 1024 * 1024),
      // The answer's one message is 5 MB.
      MAX_STRING_LENGTH: String(8 * 1024 * 1024),
    });
    try {
      const metric = async () => {
        const text = await (await fetch(`${slow.baseUrl}/metrics`)).text();
        return Number(/^io_bridge_run_stream_catchups_total (\d+)/m.exec(text)?.[1] ?? 0);
      };
      const before = await metric();
      // A long answer (5 MB, more than the kernel buffers of a loopback connection take), followed live by a raw socket that then stops reading for a while.
      const input = runInput(
        '/slow 1 ' + Array.from({ length: 1300 }, (_, i) => `word${i}-${'x'.repeat(4000)}`).join(' '),
      );
      // Read as plain text: parsing 5 MB of frames as they come would take this process's CPU from the server.
      const res = await postRun(slow.runUrl, input);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let originalRaw = '';
      while (!originalRaw.includes('TEXT_MESSAGE_CONTENT')) {
        originalRaw += decoder.decode((await reader.read()).value, { stream: true });
      }
      const originalDone = (async () => {
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          originalRaw += decoder.decode(r.value, { stream: true });
        }
      })();
      const url = new URL(eventsUrl(slow, input.runId));
      const socket = connect(Number(url.port), url.hostname);
      const received: Buffer[] = [];
      let receivedBytes = 0;
      socket.on('data', (d: Buffer) => {
        received.push(d);
        receivedBytes += d.length;
      });
      socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
      // Reading live first (the stream is attached to the run), then not at all: the kernel buffers and
      // STREAM_MAX_QUEUED_BYTES fill up, and the stream is detached from the live run.
      await eventually(() => Promise.resolve(receivedBytes > 200_000 ? true : undefined), 20_000);
      socket.pause();
      await eventually(async () => ((await metric()) > before ? true : undefined), 30_000);
      socket.resume();
      // The response ends with the chunked encoding's last chunk (the connection itself is kept alive).
      await eventually(
        () => Promise.resolve(Buffer.concat(received).subarray(-5).toString() === '0\r\n\r\n' || undefined),
        30_000,
      );
      await originalDone;
      socket.destroy();
      const response = Buffer.concat(received).toString('utf8');
      const body = response.slice(response.indexOf('\r\n\r\n') + 4);
      // Chunked transfer encoding: the SSE bytes are the chunks' payloads.
      let sse = '';
      for (let at = 0; at < body.length;) {
        const eol = body.indexOf('\r\n', at);
        const size = parseInt(body.slice(at, eol), 16);
        if (!size) break;
        sse += body.slice(eol + 2, eol + 2 + size);
        at = eol + 2 + size + 2;
      }
      expect(originalRaw.endsWith('\n\n')).toBe(true);
      // Compared as booleans: a diff of two 5 MB strings would take jest minutes.
      const [got, want] = [withoutPings(sse), withoutPings(originalRaw)];
      expect({ length: got.length, same: got === want }).toEqual({ length: want.length, same: true });
    } finally {
      await slow.close();
    }
  }, 60_000);
});

describe('a browser EventSource on GET /runs/:runId/events', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('follows a live run to its end, then reconnects with Last-Event-ID, gets 204 and stops', async () => {
    const browser = await launchChromium();
    try {
      const input = runInput(`/slow 60 ${WORDS}`);
      const original = await openRun(t.runUrl, input);
      await original.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT');
      const page = await browser.newPage();
      await page.goto(`${t.baseUrl}/io-bridge/agents`);
      const url = `/io-bridge/runs/${encodeURIComponent(input.runId)}/events`;
      const seen = await page.evaluate(
        (src) =>
          new Promise<{ ids: string[]; types: string[]; opens: number; closed: boolean }>((resolve) => {
            const ids: string[] = [];
            const types: string[] = [];
            let opens = 0;
            const source = new EventSource(src);
            const done = (closed: boolean) => {
              source.close();
              resolve({ ids, types, opens, closed });
            };
            source.onopen = () => opens++;
            source.onmessage = (m) => {
              ids.push(m.lastEventId);
              types.push((JSON.parse(m.data) as { type: string }).type);
            };
            // After the terminal event the stream ends; the browser reconnects (Last-Event-ID), gets 204, and closes.
            source.onerror = () => {
              if (source.readyState === EventSource.CLOSED) done(true);
            };
            setTimeout(() => done(false), 20_000);
          }),
        url,
      );
      await original.done;
      expect(seen.closed).toBe(true);
      expect(seen.opens).toBe(1);
      expect(seen.ids).toEqual(original.frames.map((f) => String(f.id)));
      expect(seen.types).toEqual(types(original.frames));
    } finally {
      await browser.close();
    }
  }, 40_000);
});
