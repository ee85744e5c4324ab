/**
 * The client side of the parked bench (bench/parked-bench.ts), in a process of its own: what a client
 * holds (fetch responses, sockets, abort controllers, undici's registrations and resource timings)
 * is then not counted in the server's heap. It does one thing, sent by the parent over IPC, answers
 * and exits: `park` starts runs that call the frontend tool `pick`, each client leaving once its run
 * started (a disconnect grace keeps the runs), and answers their ids; `wake` posts the results of
 * parked runs and answers the time of each.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

/** A parked run: the call it waits for, and its last stored event (TOOL_CALL_END). */
export type Waiting = { runId: string; toolCallId: string; lastId: number };

export type ClientTask =
  | { type: 'park'; base: string; count: number; concurrency: number }
  | { type: 'wake'; base: string; runs: Waiting[]; measured: number; concurrency: number };

export type ClientAnswer =
  { type: 'parked'; ids: string[] } | { type: 'woken'; wakes: number[] } | { type: 'failed'; error: string };

const PICK = { name: 'pick', description: 'pick one', parameters: { type: 'object', properties: {} } };

type SseEvent = { type: string; toolCallId?: string };
type Frame = { id: number; event: SseEvent };

/** Reads SSE frames until `stop` says so (or the stream ends), then lets the connection go. */
async function readUntil(res: Response, abort: AbortController, stop: (f: Frame) => boolean): Promise<Frame> {
  if (!res.ok || !res.body) throw new Error(`stream refused: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error('stream ended early');
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const id = /^id: (\d+)$/m.exec(block);
        const data = /^data: (.*)$/m.exec(block);
        if (!id || !data) continue; // pings, and notices that are not in the log
        const frame = { id: Number(id[1]), event: JSON.parse(data[1]) as SseEvent };
        if (stop(frame)) return frame;
      }
    }
  } finally {
    abort.abort();
  }
}

/** A stored run that calls the frontend tool `pick`; its client leaves once it started. */
async function startWaiting(base: string): Promise<string> {
  const threadId = `parked-${randomUUID()}`;
  const runId = `parked-${randomUUID()}`;
  const abort = new AbortController();
  const res = await fetch(`${base}/run`, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId,
      messages: [{ id: randomUUID(), role: 'user', content: '/tool pick {}' }],
      tools: [PICK],
      context: [],
      forwardedProps: { memory: { thread: threadId }, disconnectGraceMs: 600_000 },
    }),
  });
  await readUntil(res, abort, () => true);
  return runId;
}

/**
 * Posts the result of a parked run's call; resolves with ms from the POST to TOOL_CALL_RESULT on its
 * stream. The stream is opened first, from the call's last event (TOOL_CALL_END): that event arriving
 * says the reader follows the run, and the POST goes then.
 */
async function wake(base: string, run: Waiting): Promise<number> {
  const abort = new AbortController();
  const res = await fetch(`${base}/runs/${encodeURIComponent(run.runId)}/events`, {
    signal: abort.signal,
    headers: { accept: 'text/event-stream', 'last-event-id': String(run.lastId - 1) },
  });
  let t0 = NaN;
  let posted: Promise<Response> | undefined;
  await readUntil(res, abort, (f) => {
    if (f.id === run.lastId && !posted) {
      t0 = performance.now();
      posted = fetch(`${base}/runs/${run.runId}/tool-calls/${run.toolCallId}/result`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ content: 'blue' }),
      });
    }
    return f.event.type === 'TOOL_CALL_RESULT';
  });
  const ms = performance.now() - t0;
  const answer = await posted!;
  if (answer.status !== 202) throw new Error(`result refused: ${answer.status} ${await answer.text()}`);
  return ms;
}

/** `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return out;
}

async function perform(task: ClientTask): Promise<ClientAnswer> {
  if (task.type === 'park') {
    const ids = await pool(Array.from({ length: task.count }), task.concurrency, () =>
      startWaiting(task.base),
    );
    return { type: 'parked', ids };
  }
  const wakes: number[] = [];
  // The measured wakes one at a time, the rest unmeasured, `concurrency` at a time.
  for (const run of task.runs.slice(0, task.measured)) wakes.push(await wake(task.base, run));
  await pool(task.runs.slice(task.measured), task.concurrency, (run) => wake(task.base, run));
  return { type: 'woken', wakes };
}

if (process.argv[2] === '--parked-client') {
  process.once('message', (task: ClientTask) => {
    void perform(task)
      .catch((err: unknown): ClientAnswer => ({ type: 'failed', error: String(err) }))
      .then((answer) => process.send!(answer, () => process.exit(answer.type === 'failed' ? 1 : 0)));
  });
}
