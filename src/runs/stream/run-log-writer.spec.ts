import { setImmediate as turn } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { AguiEvent } from '../../protocol/agui-events';
import type { RunEventsRepository, StoredChunk } from '../storage/run-events.repository';
import { RunLog } from './run-log';
import { RunLogWriter } from './run-log-writer';

/** The appends the writer made, each with the runs it carried; each is answered by the test. */
class Appends {
  started: string[][] = [];
  private answers: Array<() => void> = [];

  readonly repository = {
    append: (chunks: StoredChunk[]) => {
      this.started.push(chunks.map((c) => c.runId));
      return new Promise<[]>((resolve) => this.answers.push(() => resolve([])));
    },
  } as unknown as RunEventsRepository;

  /** The oldest append in flight commits (and the writer has had a turn to go on). */
  async commitOne(): Promise<void> {
    this.answers.shift()?.();
    await turn();
    await turn();
  }
}

function setUp() {
  const appends = new Appends();
  const logs = new Map<string, RunLog>();
  const writer = new RunLogWriter(
    appends.repository,
    logs,
    () => false,
    60_000,
    new Logger('test'),
    () => undefined,
  );
  /** A run whose log the writer stores: its RUN_STARTED is framed as soon as it is sent. */
  const start = (runId: string) => {
    const events$ = new Subject<AguiEvent>();
    const log = new RunLog(runId, {
      graceMs: 0,
      abandon: () => undefined,
      produced: (l) => writer.produced(l),
      attempt: 1,
    });
    logs.set(runId, log);
    log.start(events$);
    events$.next({ type: 'RUN_STARTED', timestamp: 1, threadId: 't', runId });
  };
  return { appends, start };
}

describe('RunLogWriter: a group commit', () => {
  it('writes what the runs produced in one event-loop turn in one statement, in the next turn', async () => {
    const { appends, start } = setUp();
    start('a');
    start('b');
    expect(appends.started).toEqual([]);
    await turn();
    expect(appends.started).toEqual([['a', 'b']]);
  });

  it('keeps two writes in flight at most: the next takes all that was produced meanwhile', async () => {
    const { appends, start } = setUp();
    start('a');
    await turn();
    start('b');
    await turn();
    start('c');
    await turn();
    start('d');
    await turn();
    // Two in flight: c and d wait, then go together once one commits.
    expect(appends.started).toEqual([['a'], ['b']]);
    await appends.commitOne();
    expect(appends.started).toEqual([['a'], ['b'], ['c', 'd']]);
  });
});
