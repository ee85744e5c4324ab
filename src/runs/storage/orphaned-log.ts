import { AguiEvent, RunErrorCode } from '../../protocol/agui-events';
import { readStoredLog } from './stored-log';
import type { RunEventsRepository } from './run-events.repository';
import type { Run } from './run.entity';
import { frame } from '../events/frames';

/**
 * Ends the stored log of a run that ended without a terminal event in it (its instance died after
 * recording the end, or another recorded it INTERRUPTED) as the run was recorded: what was open is
 * closed, then RUN_FINISHED for a finished run (its end was recorded once its log held all it showed:
 * only the terminal event is missing), else RUN_ERROR with the recorded code. Stored first-come,
 * so every reader gets the same frames.
 */
export async function endOrphanedLog(
  run: Pick<Run, 'id' | 'threadId' | 'attempt' | 'status' | 'errorCode' | 'errorMessage'>,
  events: RunEventsRepository,
): Promise<void> {
  const tail: AguiEvent[] = [];
  const log = await readStoredLog(run, events, (event) => tail.push(event));
  if (log.terminal) return;
  if (run.status === 'finished') log.lifecycle.finish();
  else
    log.lifecycle.fail(
      (run.errorCode ?? (run.status === 'cancelled' ? 'CANCELLED' : 'INTERRUPTED')) as RunErrorCode,
      run.errorMessage ?? 'The run was interrupted; please retry',
    );
  let seq = log.last;
  const first = seq + 1;
  const frames = tail.map((event) => frame(++seq, event)).join('');
  await events.append(
    [{ runId: run.id, attempt: run.attempt, first, last: seq, frames, terminal: true }],
    [run.id],
  );
}
