import { isActiveStatus } from '../../src/runs/storage/run.entity';
import { db, eventually } from '../support/app';
import { BuiltService, startBuiltService } from '../support/built-service';
import { Frame, LiveRun, memoryOf, openRun, parseFrames, readRun, uid } from '../support/sse';
import { PICK, postResult, verified } from '../support/durable';
import { assertStreamRules } from '../support/stream-rules';

/**
 * Parked runs (docs/durable-runs.md#parking-runs-that-wait-for-a-frontend-tool): many parked at once
 * (each waiting for its frontend tool) still show their clients
 * the whole call (TOOL_CALL_START, ARGS, END) before the wait, on their own POST /run stream and on
 * a rejoin, and go on to RUN_FINISHED on that same stream once the result is posted.
 */
const RUNS = 60;
const env = {
  // Shorter than a loaded database's round trip: a run parks while its call is still being registered.
  RUN_PARK_AFTER_MS: '1',
  FRONTEND_TOOL_TIMEOUT_MS: '600000',
  MAX_ACTIVE_RUNS_PER_OWNER: '1000',
  MAX_READERS_PER_OWNER: '1000',
  RATE_LIMIT_PER_MINUTE: '10000',
  // 60 runs starting at once on a loaded machine queue for the pool: they wait instead of a 503.
  DATABASE_CONNECT_TIMEOUT_MS: '60000',
};

const input = (grace = false) => {
  const threadId = uid('parked');
  return {
    threadId,
    runId: uid('run'),
    messages: [{ id: uid('msg'), role: 'user', content: '/tool pick {}' }],
    tools: [PICK],
    context: [],
    forwardedProps: { ...memoryOf(threadId), ...(grace ? { disconnectGraceMs: 600_000 } : {}) },
  };
};
type Input = ReturnType<typeof input>;

/** Polls until every run of `inputs` is parked; returns the call each waits for. A run that ended instead fails it at once. */
async function allParked(inputs: Input[]): Promise<Map<string, string>> {
  const ids = inputs.map((i) => i.runId);
  return eventually(async () => {
    const { rows } = await db((q) =>
      q.query<{ id: string; parked: string | null; status: string; error_code: string | null }>(
        'SELECT id, parked, status, error_code FROM runs WHERE id = ANY($1)',
        [ids],
      ),
    );
    const ended = rows.find((r) => !isActiveStatus(r.status));
    if (ended)
      throw new Error(`run ${ended.id} ended ${ended.status} ${ended.error_code} before it was parked`);
    const parked = rows.filter((r) => r.parked !== null);
    return parked.length === ids.length ? new Map(parked.map((r) => [r.id, r.parked!])) : undefined;
  }, 60_000);
}

/** The events of the run's stored log: once a run is parked, all there is until a result wakes it. */
async function storedEvents(runId: string): Promise<Frame['event'][]> {
  const { rows } = await db((q) =>
    q.query<{ frames: string }>('SELECT frames FROM run_events WHERE run_id = $1 ORDER BY first_seq', [
      runId,
    ]),
  );
  return parseFrames(rows.map((r) => r.frames).join('')).frames.map((f) => f.event);
}

/** The call's START, ARGS and END, in that order, once each, in `events`; `after` the index of its END. */
function expectWholeCall(events: Frame['event'][], toolCallId: string): number {
  const ofCall = events.filter((e) => e.toolCallId === toolCallId).map((e) => e.type as string);
  expect(ofCall.slice(0, 3)).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END']);
  expect(ofCall.filter((t) => t === 'TOOL_CALL_END')).toHaveLength(1);
  return events.findIndex((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === toolCallId);
}

/** Posts the result of the call a parked run waits for. */
async function answer(base: string, runId: string, toolCallId: string): Promise<void> {
  expect(await postResult(base, runId, toolCallId, 'blue')).toBe(202);
}

/**
 * The raw bytes as the client got them: frames with ids counting on from the first, the terminal
 * event last, nothing after it (not even a ping).
 */
function expectRawStream(live: LiveRun, firstId: number): void {
  const raw = new TextDecoder('utf-8', { fatal: true }).decode(live.bytes());
  const blocks = raw.split('\n\n');
  expect(blocks.pop()).toBe('');
  const framed = blocks.filter((b) => b !== ': ping');
  const ids = framed.map((b) => Number(/^id: (\d+)\ndata: /.exec(b)?.[1]));
  expect(ids).toEqual(ids.map((_, i) => firstId + i));
  expect(blocks.at(-1)).toMatch(/^id: \d+\ndata: \{"type":"RUN_FINISHED"/);
}

/** What the result woke: the call's result, then the model's answer, then RUN_FINISHED. */
function expectWoken(frames: Frame[], toolCallId: string, endAt: number): void {
  const events = frames.map((f) => f.event);
  const result = events.findIndex((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === toolCallId);
  expect(result).toBeGreaterThan(endAt);
  expect(events[result].content).toBe('blue');
  expect(events.at(-1)!.type).toBe('RUN_FINISHED');
}

describe(`${RUNS} runs parked at once (RUN_PARK_AFTER_MS ${env.RUN_PARK_AFTER_MS})`, () => {
  let service: BuiltService;
  beforeAll(async () => {
    service = await startBuiltService(env);
  }, 90_000);
  afterAll(() => service?.kill());

  it("each client's own POST /run stream shows the whole call before the run waits, and goes on to RUN_FINISHED once the result is posted", async () => {
    const inputs = Array.from({ length: RUNS }, () => input());
    const lives = await Promise.all(inputs.map((i) => openRun(`${service.base}/run`, i)));
    const parked = await allParked(inputs);
    // Nothing more is stored for a parked run until its result: its log holds the whole call.
    const logs = await Promise.all(inputs.map((i) => storedEvents(i.runId)));
    const unended = inputs.filter(
      (i, n) => !logs[n].some((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === parked.get(i.runId)),
    );
    expect(`${unended.length} of ${RUNS} parked without their TOOL_CALL_END`).toBe(
      `0 of ${RUNS} parked without their TOOL_CALL_END`,
    );
    const ends = logs.map((events, n) => expectWholeCall(events, parked.get(inputs[n].runId)!));
    // Each client got the call's end before it was answered (no result is posted until all have).
    await Promise.all(
      lives.map((live, n) =>
        live.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === parked.get(inputs[n].runId)),
      ),
    );
    lives.forEach((live, n) =>
      expect(
        expectWholeCall(
          live.frames.map((f) => f.event),
          parked.get(inputs[n].runId)!,
        ),
      ).toBe(ends[n]),
    );

    await Promise.all(inputs.map((i) => answer(service.base, i.runId, parked.get(i.runId)!)));
    for (const [n, live] of lives.entries()) {
      const frames = await live.done;
      assertStreamRules(frames, inputs[n]);
      expect(await verified(frames)).toBe(frames.length);
      expectWoken(frames, parked.get(inputs[n].runId)!, ends[n]);
      expectRawStream(live, 1);
    }
  }, 180_000);

  it('a rejoin of each parked run (Last-Event-ID anywhere up to its TOOL_CALL_END) shows the rest of the call, then goes on to RUN_FINISHED', async () => {
    const inputs = Array.from({ length: RUNS }, () => input(true));
    // The clients leave once the call started (their disconnect grace keeps the runs), and rejoin.
    await Promise.all(
      inputs.map(async (i) => {
        const abort = new AbortController();
        const res = await fetch(`${service.base}/run`, {
          method: 'POST',
          signal: abort.signal,
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify(i),
        });
        const live = await readRun(res);
        await live.waitFor((e) => e.type === 'TOOL_CALL_START');
        abort.abort();
      }),
    );
    const parked = await allParked(inputs);
    const logs = await Promise.all(inputs.map((i) => storedEvents(i.runId)));
    const ends = logs.map((events, n) => expectWholeCall(events, parked.get(inputs[n].runId)!));
    // Rejoined from every point up to the call's end (its id is its index + 1), the call's start first.
    const afters = ends.map((end, n) => (n % 2 ? end - 2 : n % (end + 1)));
    const rejoins = await Promise.all(
      inputs.map(async (i, n) => {
        const res = await fetch(`${service.base}/runs/${encodeURIComponent(i.runId)}/events`, {
          headers: { accept: 'text/event-stream', 'last-event-id': String(afters[n]) },
        });
        expect(res.status).toBe(200);
        return readRun(res);
      }),
    );
    await Promise.all(
      rejoins.map((live, n) =>
        live.waitFor((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === parked.get(inputs[n].runId)),
      ),
    );
    rejoins.forEach((live, n) =>
      expect(live.frames.slice(0, ends[n] + 1 - afters[n]).map((f) => f.event)).toEqual(
        logs[n].slice(afters[n], ends[n] + 1),
      ),
    );

    await Promise.all(inputs.map((i) => answer(service.base, i.runId, parked.get(i.runId)!)));
    for (const [n, live] of rejoins.entries()) {
      const tail = await live.done;
      expect(tail[0].id).toBe(afters[n] + 1);
      const whole = [...logs[n].slice(0, afters[n]).map((event, i) => ({ id: i + 1, event })), ...tail];
      assertStreamRules(whole, inputs[n]);
      expect(await verified(whole)).toBe(whole.length);
      expectWoken(whole, parked.get(inputs[n].runId)!, ends[n]);
      expectRawStream(live, afters[n] + 1);
    }
  }, 180_000);
});
