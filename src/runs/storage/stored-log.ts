import { AguiEvent } from '../../protocol/agui-events';
import { RunLifecycle } from '../events/run-lifecycle';
import { RunEventsRepository } from './run-events.repository';
import { parseFrames } from '../events/frames';

/**
 * A run's stored log, read to its end, as whoever goes on with it sees it (another replica
 * continuing the run, or ending it): its last id, whether it is complete, the steps and tool results it showed, and a
 * lifecycle that has seen every event, so what the log left open can be closed.
 */
export type StoredLog = {
  last: number;
  terminal: boolean;
  steps: number;
  lifecycle: RunLifecycle;
  /** The tool results it showed, by tool call. */
  results: Map<string, { messageId: string; content: string }>;
};

/** Reads the run's whole log (page by page) into a lifecycle whose events from now on go to `emit`. */
export async function readStoredLog(
  run: { id: string; threadId: string },
  events: RunEventsRepository,
  emit: (event: AguiEvent) => void,
): Promise<StoredLog> {
  let replaying = true;
  const lifecycle = new RunLifecycle({
    threadId: run.threadId,
    runId: run.id,
    emit: (event) => void (replaying || emit(event)),
  });
  let last = 0;
  let steps = 0;
  let terminal = false;
  const results: StoredLog['results'] = new Map();
  for (let more = true; more;) {
    const page = await events.page(run.id, last);
    for (const chunk of page.chunks) {
      if (chunk.last <= last) continue;
      for (const event of parseFrames(chunk.frames)) {
        if (event.type === 'RUN_STARTED') lifecycle.start();
        else lifecycle.push(event as never);
        if (event.type === 'STEP_STARTED') steps++;
        if (event.type === 'TOOL_CALL_RESULT') results.set(event.toolCallId, event);
      }
      last = chunk.last;
      terminal ||= chunk.terminal;
    }
    more = page.more && !terminal;
  }
  replaying = false;
  return { last, terminal, steps, lifecycle, results };
}
