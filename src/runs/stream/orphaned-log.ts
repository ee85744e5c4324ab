import { AguiEvent } from '../../protocol/agui-events';
import { RunLifecycle } from '../engine/run-lifecycle';
import type { RunEventsRepository } from '../storage/run-events.repository';
import type { Run } from '../storage/run.entity';
import { frame, parseFrames } from './run-log';

/**
 * Ends the stored log of a run that ended without a terminal event in it (its instance died, and
 * another recorded it INTERRUPTED) as the run was recorded: what was open is closed, then RUN_ERROR.
 * Stored first-come, so every reader gets the same frames.
 */
export async function endOrphanedLog(run: Run, events: RunEventsRepository): Promise<void> {
  const runId = run.id;
  const tail: AguiEvent[] = [];
  let replaying = true;
  const lifecycle = new RunLifecycle({
    threadId: run.threadId,
    runId,
    emit: (event) => void (replaying || tail.push(event)),
  });
  // The whole log, a page at a time: what is open at its end is what the tail closes.
  let seq = 0;
  for (let more = true; more;) {
    const page = await events.page(runId, seq);
    if (page.chunks.at(-1)?.terminal) return;
    for (const event of page.chunks.flatMap((c) => parseFrames(c.frames))) {
      if (event.type === 'RUN_STARTED') lifecycle.start();
      else lifecycle.push(event as never);
    }
    seq = page.chunks.at(-1)?.last ?? seq;
    more = page.more;
  }
  replaying = false;
  const code = run.errorCode === 'CANCELLED' ? 'CANCELLED' : 'INTERRUPTED';
  lifecycle.fail(code, run.errorMessage ?? 'The run was interrupted; please retry');
  const first = seq + 1;
  const frames = tail.map((event) => frame(++seq, event)).join('');
  await events.append([{ runId, first, last: seq, frames, terminal: true }], [runId]);
}
