import { AguiEvent } from '../../protocol/agui-events';
import { readStoredLog } from '../durable/stored-log';
import type { RunEventsRepository } from '../storage/run-events.repository';
import type { Run } from '../storage/run.entity';
import { frame } from './run-log';

/**
 * Ends the stored log of a run that ended without a terminal event in it (its instance died, and
 * another recorded it INTERRUPTED) as the run was recorded: what was open is closed, then RUN_ERROR.
 * Stored first-come, so every reader gets the same frames.
 */
export async function endOrphanedLog(
  run: Pick<Run, 'id' | 'threadId' | 'attempt' | 'errorCode' | 'errorMessage'>,
  events: RunEventsRepository,
): Promise<void> {
  const tail: AguiEvent[] = [];
  const log = await readStoredLog(run, events, (event) => tail.push(event));
  if (log.terminal) return;
  const code = run.errorCode === 'CANCELLED' ? 'CANCELLED' : 'INTERRUPTED';
  log.lifecycle.fail(code, run.errorMessage ?? 'The run was interrupted; please retry');
  let seq = log.last;
  const first = seq + 1;
  const frames = tail.map((event) => frame(++seq, event)).join('');
  await events.append(
    [{ runId: run.id, attempt: run.attempt, first, last: seq, frames, terminal: true }],
    [run.id],
  );
}
