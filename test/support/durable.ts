import assert from 'node:assert/strict';
import { verifyEvents, type BaseEvent } from '@ag-ui/client';
import { from } from 'rxjs';
import { Frame, memoryOf, openRun, readRun, uid } from './sse';

/**
 * Clients of runs that outlive their replica (docs/durable-runs.md): shared by
 * test/durability/durable-runs.e2e-spec.ts and the bench's durable part (bench/durable-bench.ts), which drive
 * the same runs against built replicas.
 */

/** `w1 w2 … wn`: a scripted `/slow <ms> <text>` answer of known length ("You said: " + the text). */
export const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i + 1}`).join(' ');

/** A chat turn on `threadId` (stored, as io.Assist's are) with a fresh run id. */
export const turn = (threadId: string, text: string) => ({
  threadId,
  runId: uid('run'),
  messages: [{ id: uid('msg'), role: 'user', content: text }],
  tools: [],
  context: [],
  forwardedProps: memoryOf(threadId),
});

export type Turn = ReturnType<typeof turn>;

/** A frontend tool that takes no arguments: a turn of `/tool pick {}` calls it. */
export const PICK = { name: 'pick', description: 'pick one', parameters: { type: 'object', properties: {} } };

/** Posts the result of a frontend tool call the run waits for, at `base`; resolves with the status. */
export async function postResult(
  base: string,
  runId: string,
  toolCallId: string,
  content: unknown,
): Promise<number> {
  const res = await fetch(
    `${base}/runs/${encodeURIComponent(runId)}/tool-calls/${encodeURIComponent(toolCallId)}/result`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content }) },
  );
  await res.body?.cancel();
  return res.status;
}

/** The run's events read from `base` after `after` until its terminal event (with its id). */
export async function rejoin(base: string, runId: string, after: number, timeoutMs = 30_000) {
  const res = await fetch(`${base}/runs/${encodeURIComponent(runId)}/events`, {
    headers: { accept: 'text/event-stream', 'last-event-id': String(after) },
  });
  return readRun(res, timeoutMs);
}

/** Whether @ag-ui/client's verifier takes the whole stream: resolves with the events it passed. */
export const verified = (frames: Frame[]) =>
  new Promise<number>((resolve, reject) => {
    let count = 0;
    // @ag-ui/client has its own copy of rxjs: its operator takes its own Observable type.
    verifyEvents()(from(frames.map((f) => f.event as BaseEvent)) as never).subscribe({
      next: () => count++,
      error: reject,
      complete: () => resolve(count),
    });
  });

/** The run's whole log as a replica serves it from the start, unparsed. */
export const rawLog = async (base: string, runId: string) =>
  (
    await fetch(`${base}/runs/${encodeURIComponent(runId)}/events`, {
      headers: { accept: 'text/event-stream' },
    })
  ).text();

/** The raw log as any replica serves it from the start: one RUN_STARTED, ids 1..n in order, one terminal event, last. */
export async function checkRawLog(base: string, runId: string): Promise<string> {
  const raw = await rawLog(base, runId);
  const ids = [...raw.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  // node:assert, not jest's expect: the bench (bench/durable-bench.ts) builds this file too.
  assert.deepEqual(
    ids,
    ids.map((_, i) => i + 1),
    `${runId}: ids not 1..n in order`,
  );
  assert.equal(raw.match(/"type":"RUN_STARTED"/g)?.length, 1, `${runId}: not one RUN_STARTED`);
  assert.equal(raw.match(/"type":"RUN_(FINISHED|ERROR)"/g)?.length, 1, `${runId}: not one terminal event`);
  return raw;
}

/**
 * A client as the protocol asks: it reads its `POST /run` stream to `base`; on RUN_MOVED (or a
 * stream cut short) it rejoins the replica `pick()` names after its last id, until the terminal
 * event. Resolves with the run's logged frames and how many of its streams ended RUN_MOVED.
 */
export async function followRun(
  input: Turn,
  base: string,
  pick: () => string,
): Promise<{ frames: Frame[]; moved: number }> {
  let moved = 0;
  const live = await openRun(`${base}/run`, input);
  await live.waitFor((e) => e.type === 'TEXT_MESSAGE_CONTENT', 15_000);
  let frames = await live.done.catch(() => live.frames);
  const logged: Frame[] = [];
  for (;;) {
    logged.push(...frames.filter((f) => !f.unlogged && f.id > (logged.at(-1)?.id ?? 0)));
    const end = logged.at(-1)?.event.type;
    if (end === 'RUN_FINISHED' || end === 'RUN_ERROR') return { frames: logged, moved };
    if (frames.some((f) => f.unlogged && f.event.code === 'RUN_MOVED')) moved++;
    const joined = await rejoin(pick(), input.runId, logged.at(-1)?.id ?? 0).catch(() => undefined);
    if (!joined || joined.res.status !== 200) {
      await new Promise((r) => setTimeout(r, 200));
      frames = [];
      continue;
    }
    frames = await joined.done.catch(() => joined.frames);
  }
}
