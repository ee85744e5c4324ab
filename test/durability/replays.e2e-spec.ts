import { createHash, randomUUID } from 'node:crypto';
import { connect, Socket } from 'node:net';
import { Client } from 'pg';
import { eventually } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { runInput } from '../support/sse';

const REPLAYS = 400;
/** `/bench <n> 0 0`: one delta a turn, so one frame each (about 130 bytes): 25,000 make a 3 MB log. */
const DELTAS = 25_000;
const OWNER = `replayer-${randomUUID()}`;

type Digest = { sha: string; bytes: number; frames: number; last: string; trailing: string };

/**
 * What a stream carries, read as it comes (never held whole: 400 of 3 MB would not fit): its frames'
 * bytes hashed with the heartbeat comments left out, how many frames, its last frame, and what
 * follows the last complete frame (nothing, in a stream that ended properly).
 */
async function digest(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Digest> {
  const hash = createHash('sha256');
  const decoder = new TextDecoder();
  let carry = '';
  let bytes = 0;
  let frames = 0;
  let last = '';
  const take = (text: string) => {
    carry += text;
    const end = carry.lastIndexOf('\n\n');
    if (end < 0) return;
    for (const block of carry.slice(0, end).split('\n\n')) {
      if (block.startsWith(':')) continue;
      hash.update(`${block}\n\n`);
      bytes += Buffer.byteLength(block) + 2;
      frames++;
      last = block;
    }
    carry = carry.slice(end + 2);
  };
  for await (const data of body) take(decoder.decode(data, { stream: true }));
  take(decoder.decode());
  return { sha: hash.digest('hex'), bytes, frames, last, trailing: carry };
}

/** The body of a raw HTTP/1.1 response sent with `Transfer-Encoding: chunked`, as far as it came. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = raw.indexOf('\r\n\r\n') + 4;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    if (eol < 0) break;
    const size = parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!size) break;
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** A run of `text` read to its end (as `owner`): its id and what its stream carried. */
async function recordRun(service: BuiltService, text: string) {
  const input = runInput(text);
  const res = await fetch(`${service.base}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-resource-id': OWNER },
    body: JSON.stringify(input),
  });
  expect(res.status).toBe(200);
  const carried = await digest(res.body!);
  expect(carried.last).toContain('"type":"RUN_FINISHED"');
  return { runId: input.runId, digest: carried };
}

type Outcome =
  | { kind: 'stream'; digest: Digest }
  | { kind: 'refused'; status: number; contentType: string | null; body: unknown };

/** `GET /runs/:runId/events` read to its end: the stream it carried, or the refusal. */
async function replay(service: BuiltService, runId: string): Promise<Outcome> {
  const res = await fetch(`${service.base}/runs/${runId}/events`, {
    headers: { accept: 'text/event-stream', 'x-resource-id': OWNER },
  });
  if (res.status === 200) return { kind: 'stream', digest: await digest(res.body!) };
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Left as text: the envelope check fails with it.
  }
  return { kind: 'refused', status: res.status, contentType: res.headers.get('content-type'), body };
}

/** A refusal as the issue wants it: 429 or 503, before any header of a stream, with the error envelope. */
function expectRefusedBeforeHeaders(outcome: Outcome): void {
  expect(outcome.kind).toBe('refused');
  if (outcome.kind !== 'refused') return;
  expect([429, 503]).toContain(outcome.status);
  expect(outcome.contentType).toMatch(/application\/json/);
  expect(outcome.body).toMatchObject({
    statusCode: outcome.status,
    code: outcome.status === 429 ? 'TOO_MANY_READERS' : 'SERVICE_UNAVAILABLE',
  });
}

/** `url` asked again and again until `stop()`: each answer's status. */
function probe(url: string) {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const res = await fetch(url, { headers: { 'x-resource-id': OWNER } }).catch(() => undefined);
      await res?.arrayBuffer().catch(() => undefined);
      statuses.push(res?.status ?? 0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return statuses;
    },
  };
}

async function metric(service: BuiltService, line: RegExp): Promise<number> {
  const text = await (await fetch(`${service.origin}/metrics`)).text();
  return Number(line.exec(text)?.[1] ?? 0);
}

/** The 3 MB run every part replays (stored in the e2e database, so any instance replays it). */
let big: Awaited<ReturnType<typeof recordRun>>;

/**
 * Replays (docs/limits.md#replays): those of a finished run are served from storage a page at a time, never
 * holding a pool connection while they wait on a socket; an exhausted pool is a 503 before the headers, and a
 * stream that sent its headers ends with the run's terminal event (or is closed, logged and counted). On the
 * built service, with the per-run and per-owner reader caps lifted so that the pool is what the replays run
 * into.
 */
describe('400 parallel replays of a finished 3 MB run (pool of 4, 250 ms to get a connection)', () => {
  let service: BuiltService | undefined;
  beforeAll(async () => {
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      DATABASE_POOL_SIZE: '4',
      DATABASE_CONNECT_TIMEOUT_MS: '250',
      MAX_READERS_PER_OWNER: '1000',
      MAX_READERS_PER_RUN: '1000',
    });
    big = await recordRun(service, `/bench ${DELTAS} 0 0`);
    expect(big.digest.bytes).toBeGreaterThan(2.5e6);
  }, 180_000);
  afterAll(() => service?.stop());

  it('every 200 is the whole log byte for byte, ending with its terminal event; every refusal a 429/503 envelope; other routes served', async () => {
    const live = probe(`${service!.origin}/health/live`);
    const threads = probe(`${service!.base}/threads`);
    const outcomes = await Promise.all(Array.from({ length: REPLAYS }, () => replay(service!, big.runId)));
    const liveStatuses = await live.stop();
    const threadStatuses = await threads.stop();

    const streams = outcomes.flatMap((o) => (o.kind === 'stream' ? [o.digest] : []));
    // Every stream that got its headers got the whole log, exactly as the run's own stream sent it.
    expect(
      streams
        .filter((d) => d.sha !== big.digest.sha)
        .map(({ frames, bytes, last }) => ({ frames, bytes, last })),
    ).toEqual([]);
    for (const d of streams) expect(d.trailing).toBe('');
    expect(streams.length).toBeGreaterThan(0);
    for (const o of outcomes) if (o.kind === 'refused') expectRefusedBeforeHeaders(o);
    // The service went on serving its other routes, the one reading the database included.
    expect(liveStatuses.length).toBeGreaterThan(0);
    expect(liveStatuses.filter((s) => s !== 200)).toEqual([]);
    expect(threadStatuses.length).toBeGreaterThan(0);
    expect(threadStatuses.filter((s) => s !== 200)).toEqual([]);
  }, 300_000);
});

/** The log of `runId` as stored (`run_events`), read whole: what every replay of it must carry. */
async function storedLog(runId: string): Promise<Digest> {
  const client = new Client({ connectionString: process.env.E2E_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ frames: string }>(
      'SELECT frames FROM run_events WHERE run_id = $1 ORDER BY first_seq',
      [runId],
    );
    return await digest([Buffer.from(rows.map((r) => r.frames).join(''))]);
  } finally {
    await client.end();
  }
}

/**
 * A storm of replays is written a slice at a time, a bounded number of slices per turn of
 * the event loop (docs/limits.md#replays). Pacing must not cost a byte: with the caps lifted and time
 * to wait for the database, every one of 400 replays is the stored log, byte for byte and in order,
 * ending with the terminal event, while `/health/live` keeps answering.
 */
describe('a storm of 400 replays of a 3 MB run, each paced by the turns of the event loop', () => {
  let service: BuiltService | undefined;
  let run: Awaited<ReturnType<typeof recordRun>>;
  beforeAll(async () => {
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      DATABASE_CONNECT_TIMEOUT_MS: '120000',
      MAX_READERS_PER_OWNER: '1000',
      MAX_READERS_PER_RUN: '1000',
    });
    run = await recordRun(service, `/bench ${DELTAS} 0 0`);
  }, 180_000);
  afterAll(() => service?.stop());

  it('every replay is the stored log byte for byte, with its terminal event; /health/live answers 200 throughout', async () => {
    const stored = await storedLog(run.runId);
    expect(stored.bytes).toBeGreaterThan(2.5e6);
    expect(stored.last).toContain('"type":"RUN_FINISHED"');
    const live = probe(`${service!.origin}/health/live`);
    const outcomes = await Promise.all(Array.from({ length: REPLAYS }, () => replay(service!, run.runId)));
    const liveStatuses = await live.stop();

    const wrong = outcomes.flatMap((o, i) =>
      o.kind === 'stream' && o.digest.sha === stored.sha && o.digest.trailing === ''
        ? []
        : [{ i, ...(o.kind === 'stream' ? { ...o.digest, sha: undefined } : o) }],
    );
    expect(wrong).toEqual([]);
    expect(liveStatuses.length).toBeGreaterThan(0);
    expect(liveStatuses.filter((s) => s !== 200)).toEqual([]);
  }, 300_000);
});

describe('replays and a database that cannot serve them (pool of 3, 3 s statement timeout)', () => {
  let service: BuiltService | undefined;
  /** A 13 MB log: more than the kernel buffers of a loopback connection hold, so a paused reader stalls the stream. */
  let huge: Awaited<ReturnType<typeof recordRun>>;
  beforeAll(async () => {
    service = await startBuiltService({
      DATABASE_URL: process.env.E2E_DATABASE_URL!,
      DATABASE_POOL_SIZE: '3',
      DATABASE_CONNECT_TIMEOUT_MS: '1000',
      DATABASE_STATEMENT_TIMEOUT_MS: '3000',
      MAX_READERS_PER_OWNER: '1000',
      MAX_READERS_PER_RUN: '1000',
      MAX_BODY_BYTES: String(32 * 1024 * 1024),
      MAX_STRING_LENGTH: String(32 * 1024 * 1024),
    });
    // The default answer says the words back, one a turn: 12,000 words of 1,000 letters.
    huge = await recordRun(service, `${'y'.repeat(999)} `.repeat(12_000));
    expect(huge.digest.bytes).toBeGreaterThan(12e6);
  }, 180_000);
  afterAll(() => service?.stop());

  /** A transaction holding `run_events` locked (every read of it waits), until the returned function. */
  async function lockRunEvents(): Promise<() => Promise<void>> {
    const client = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE');
    return async () => {
      await client.query('ROLLBACK');
      await client.end();
    };
  }
  const waitingOnRunEvents = async (atLeast: number) => {
    const client = new Client({ connectionString: process.env.E2E_DATABASE_URL });
    await client.connect();
    try {
      await eventually(async () => {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE c.relname = 'run_events' AND NOT l.granted`,
        );
        return rows[0].n >= atLeast ? true : undefined;
      }, 10_000);
    } finally {
      await client.end();
    }
  };

  /**
   * A replay over a raw socket that reads the headers and the first bytes, then nothing until
   * `resume()`; the service closes the connection after the response (`Connection: close`).
   */
  async function pausedReplay(runId: string) {
    const url = new URL(`${service!.base}/runs/${runId}/events`);
    const socket: Socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    let closed = false;
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => (closed = true));
    socket.write(
      `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nX-Resource-Id: ${OWNER}\r\nConnection: close\r\n\r\n`,
    );
    await eventually(() => Promise.resolve(chunks.length ? true : undefined), 10_000);
    socket.pause();
    expect(Buffer.concat(chunks).toString('latin1')).toMatch(/^HTTP\/1\.1 200/);
    return {
      resume: () => socket.resume(),
      closed: () => closed,
      body: () => dechunk(Buffer.concat(chunks)),
      destroy: () => socket.destroy(),
    };
  }

  it('replays stuck on storage hold half the pool at most: other routes are served, the replays past it are 503 before any header', async () => {
    const unlock = await lockRunEvents();
    let outcomes: Outcome[];
    let threadStatuses: number[];
    try {
      const replays = Array.from({ length: 5 }, () => replay(service!, big.runId));
      // One replay reads the log (and waits on the lock) while the others wait their turn.
      await waitingOnRunEvents(1);
      const threads = probe(`${service!.base}/threads`);
      outcomes = await Promise.all(replays);
      threadStatuses = await threads.stop();
    } finally {
      await unlock();
    }
    // None of them sent a header: each is a 503 envelope (the read cut by the statement timeout, or
    // no turn to read within the connect timeout).
    for (const o of outcomes) expectRefusedBeforeHeaders(o);
    expect(outcomes.map((o) => (o.kind === 'refused' ? o.status : 200))).toEqual([503, 503, 503, 503, 503]);
    expect(threadStatuses.length).toBeGreaterThan(0);
    expect(threadStatuses.filter((s) => s !== 200)).toEqual([]);
    // The log is read again once the database serves it.
    const after = await replay(service!, big.runId);
    expect(after.kind === 'stream' && after.digest.sha).toBe(big.digest.sha);
  }, 60_000);

  it('paused readers hold no connection while their sockets are full: the pool is idle, other replays and routes are served', async () => {
    const paused = await Promise.all(Array.from({ length: 5 }, () => pausedReplay(huge.runId)));
    try {
      // Each stream waits on its socket (13 MB do not fit in its buffers), and no connection is lent.
      await eventually(
        async () =>
          (await metric(service!, /^io_bridge_db_pool_connections\{state="active"\} (\d+)/m)) === 0
            ? true
            : undefined,
        10_000,
      );
      expect(paused.filter((p) => p.closed())).toEqual([]);
      expect((await fetch(`${service!.base}/threads`, { headers: { 'x-resource-id': OWNER } })).status).toBe(
        200,
      );
      const other = await replay(service!, huge.runId);
      expect(other.kind === 'stream' && other.digest.sha).toBe(huge.digest.sha);
      // The paused readers, resumed, get the whole log too.
      for (const p of paused) p.resume();
      await eventually(() => Promise.resolve(paused.every((p) => p.closed()) || undefined), 60_000);
      for (const p of paused) expect((await digest([p.body()])).sha).toBe(huge.digest.sha);
    } finally {
      for (const p of paused) p.destroy();
    }
  }, 120_000);

  it('a stream whose storage fails after its headers is closed without its terminal event, logged and counted', async () => {
    const failed = /^io_bridge_stream_closed_total\{reason="storage_failed"\} (\d+)/m;
    const before = await metric(service!, failed);
    const reader = await pausedReplay(huge.runId);
    let unlock: (() => Promise<void>) | undefined;
    try {
      // The stream waits on its full socket; the log is locked; the reader reads on, the next page waits.
      await eventually(
        async () =>
          (await metric(service!, /^io_bridge_db_pool_connections\{state="active"\} (\d+)/m)) === 0
            ? true
            : undefined,
        10_000,
      );
      unlock = await lockRunEvents();
      reader.resume();
      await eventually(() => Promise.resolve(reader.closed() || undefined), 30_000);
      const got = await digest([reader.body()]);
      expect(got.last).not.toContain('"type":"RUN_FINISHED"');
      expect(got.bytes).toBeLessThan(huge.digest.bytes);
      expect(await metric(service!, failed)).toBe(before + 1);
      expect(service!.output()).toContain('reading its stored events failed, its stream is closed');
    } finally {
      await unlock?.();
      reader.destroy();
    }
  }, 60_000);
});
