import { memoryOf, uid, type Frame } from '../test/support/sse';
import { words } from '../test/support/durable';

/**
 * The chaos harness's client (bench/chaos.ts): one run driven as a durable client does it, on raw
 * SSE bytes. It posts the run; whenever its connection drops (or the POST is cut before any event) it
 * rejoins any live replica with `Last-Event-ID` (the last id it saw; none if none), until a terminal
 * event, a 204 on rejoin, or its deadline. It keeps every frame it was sent, repeats included, so
 * the checks see what a client saw, not a cleaned-up log.
 */

/** A replica a client may connect to: its label (`r<slot>.<generation>`) and API base URL. */
export type Target = { label: string; base: string };

export type Connection = {
  kind: 'post' | 'rejoin';
  replica: string;
  /** The HTTP status; absent when the connection failed before a response. */
  status?: number;
  /** Frames this connection delivered. */
  frames: number;
  /** How it ended: a terminal event, the server closed it, it broke, RUN_MOVED, refused, 204, the deadline. */
  end: 'terminal' | 'eof' | 'error' | 'moved' | 'refused' | '204' | 'aborted';
  error?: string;
};

export type RunTrace = {
  n: number;
  runId: string;
  threadId: string;
  /** The answer the scripted model gives: `You said: r<n> w1 … w<words>`. */
  expected: string;
  startedAt: number;
  endedAt: number;
  /** Every frame received, in order, across connections (frames without `id:` numbered after the one before). */
  frames: Frame[];
  /** Blocks that are not SSE as docs/protocol.md#the-stream writes it. */
  framing: string[];
  connections: Connection[];
  /** terminal: a RUN_FINISHED or RUN_ERROR; 204: a rejoin said the client has everything; refused: a 4xx it cannot retry. */
  end: 'terminal' | '204' | 'timeout' | 'refused';
  /** The answer of the last response that was not a stream (a refusal), for the report. */
  refusedWith?: string;
  /** POSTs sent again because the run was unknown (the first one was cut before the run was stored). */
  reposts: number;
};

export type ClientOptions = {
  /** `/slow <wordMs>`: a word every so many ms. */
  wordMs: number;
  words: number;
  runTimeoutMs: number;
  /** forwardedProps.disconnectGraceMs: a run whose readers all dropped (their replica died) goes on for a rejoin. */
  graceMs: number;
  /** The wait before trying again after a refusal or a failed connection. */
  retryMs?: number;
};

const TERMINAL = new Set(['RUN_FINISHED', 'RUN_ERROR']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The answer of run `n`: the scripted `/slow` echo of its prompt. */
export const answerOf = (n: number, count: number) => `You said: r${n} ${words(count)}`;

/** Reads one response's SSE body into the trace until a terminal event, RUN_MOVED, its end or the deadline. */
async function readStream(res: Response, trace: RunTrace, conn: Connection, signal: AbortSignal) {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const reader = res.body!.getReader();
  let text = '';
  let ended = false;
  // After the terminal event the stream should close: read on briefly so anything sent after it shows.
  let closeTimer: NodeJS.Timeout | undefined;
  const take = (block: string) => {
    if (block === ': ping') return;
    const m = /^(?:id: (\d+)\n)?data: ([^\n]+)$/.exec(block);
    let event: Record<string, unknown>;
    try {
      if (!m || block.includes('\r')) throw new Error('not a frame');
      event = JSON.parse(m[2]) as Record<string, unknown>;
    } catch {
      trace.framing.push(`${conn.kind} ${conn.replica}: ${JSON.stringify(block.slice(0, 200))}`);
      return;
    }
    if (m[1] === undefined && event.type === 'RUN_ERROR' && event.code === 'RUN_MOVED') {
      // Not part of the run's log: the replica drained; the client rejoins after its last id.
      conn.end = 'moved';
      ended = true;
      return;
    }
    const frame: Frame =
      m[1] !== undefined
        ? { id: Number(m[1]), event }
        : { id: (trace.frames.at(-1)?.id ?? 0) + 1, event, unlogged: true };
    trace.frames.push(frame);
    conn.frames++;
    if (TERMINAL.has(event.type as string) && !ended) {
      conn.end = 'terminal';
      ended = true;
      closeTimer = setTimeout(() => void reader.cancel().catch(() => undefined), 2000);
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      for (let cut = text.indexOf('\n\n'); cut >= 0; cut = text.indexOf('\n\n')) {
        take(text.slice(0, cut));
        text = text.slice(cut + 2);
      }
      if (conn.end === 'moved') break;
    }
    if (!ended) conn.end = 'eof';
  } catch (err) {
    if (!ended) {
      conn.end = signal.aborted ? 'aborted' : 'error';
      conn.error = String(err);
    }
  } finally {
    clearTimeout(closeTimer);
    await reader.cancel().catch(() => undefined);
  }
}

/**
 * Drives run `n` to its end. `pick` names a live replica (undefined: none up now, try later); each
 * connection goes to a new pick, as behind a load balancer.
 */
export async function driveRun(
  n: number,
  tag: string,
  pick: () => Target | undefined,
  options: ClientOptions,
): Promise<RunTrace> {
  const retryMs = options.retryMs ?? 250;
  const threadId = `chaos-${tag}-${n}`;
  const runId = uid(`chaos-run-${n}`);
  const body = JSON.stringify({
    threadId,
    runId,
    messages: [
      { id: uid('msg'), role: 'user', content: `/slow ${options.wordMs} r${n} ${words(options.words)}` },
    ],
    tools: [],
    context: [],
    forwardedProps: { ...memoryOf(threadId), disconnectGraceMs: options.graceMs },
  });
  const trace: RunTrace = {
    n,
    runId,
    threadId,
    expected: answerOf(n, options.words),
    startedAt: Date.now(),
    endedAt: 0,
    frames: [],
    framing: [],
    connections: [],
    end: 'timeout',
    reposts: 0,
  };
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(), options.runTimeoutMs);
  let post = true;
  try {
    while (!abort.signal.aborted) {
      const target = pick();
      if (!target) {
        await sleep(retryMs);
        continue;
      }
      const conn: Connection = {
        kind: post ? 'post' : 'rejoin',
        replica: target.label,
        frames: 0,
        end: 'error',
      };
      trace.connections.push(conn);
      const lastId = trace.frames.filter((f) => !f.unlogged).at(-1)?.id;
      let res: Response;
      try {
        res = post
          ? await fetch(`${target.base}/run`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
              body,
              signal: abort.signal,
            })
          : await fetch(`${target.base}/runs/${encodeURIComponent(runId)}/events`, {
              headers: {
                accept: 'text/event-stream',
                ...(lastId !== undefined ? { 'last-event-id': String(lastId) } : {}),
              },
              signal: abort.signal,
            });
      } catch (err) {
        // The replica is down, or the POST was cut before an answer: whether the run was stored, a rejoin tells.
        conn.error = String(err);
        if (abort.signal.aborted) conn.end = 'aborted';
        post = false;
        await sleep(retryMs);
        continue;
      }
      conn.status = res.status;
      if (res.status === 200) {
        await readStream(res, trace, conn, abort.signal);
        if (conn.end === 'terminal') {
          trace.end = 'terminal';
          break;
        }
        // Cut short (its replica died or was stopped), or moved: rejoin after the last id seen.
        post = false;
        continue;
      }
      const answer = await res.text().catch(() => '');
      conn.end = res.status === 204 ? '204' : 'refused';
      if (res.status === 204) {
        trace.end = '204';
        break;
      }
      if (res.status === 404 && !post && lastId === undefined) {
        // The run is unknown: its POST was cut before it was stored. Post it again.
        post = true;
        trace.reposts++;
        continue;
      }
      if (res.status === 409 && post) {
        // RUN_ALREADY_EXISTS: an earlier POST of it was stored after all.
        post = false;
        continue;
      }
      if (res.status === 429 || res.status >= 500 || res.status === 404) {
        // A replica starting, draining or busy, or a run not yet visible here: try again elsewhere.
        await sleep(retryMs);
        continue;
      }
      trace.end = 'refused';
      trace.refusedWith = `${res.status} ${answer.slice(0, 300)}`;
      break;
    }
  } finally {
    clearTimeout(deadline);
    trace.endedAt = Date.now();
  }
  return trace;
}
