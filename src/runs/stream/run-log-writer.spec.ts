import { Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import type { AguiEvent } from '../../protocol/agui-events';
import type { RunEventsRepository, StoredChunk } from '../storage/run-events.repository';
import { RunLog } from './run-log';
import { RunLogWriter, WRITE_SPACING_MS } from './run-log-writer';

/** The appends the writer made: when each started and the runs it carried; each is answered by the test. */
class Appends {
  started: Array<{ at: number; runs: string[] }> = [];
  private answers: Array<() => void> = [];

  readonly repository = {
    append: (chunks: StoredChunk[]) => {
      this.started.push({ at: performance.now(), runs: chunks.map((c) => c.runId) });
      return new Promise<[]>((resolve) => this.answers.push(() => resolve([])));
    },
  } as unknown as RunEventsRepository;

  /** Every append in flight commits. */
  async commit(): Promise<void> {
    for (const answer of this.answers.splice(0)) answer();
    await jest.advanceTimersByTimeAsync(0);
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
  /** A run whose log is written by the writer: its RUN_STARTED is framed as soon as it is sent. */
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
    return log;
  };
  return { appends, start };
}

describe('RunLogWriter', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('starts a write after a quiet spell at once, in the next event-loop turn', async () => {
    const { appends, start } = setUp();
    start('a');
    start('b');
    expect(appends.started).toEqual([]);
    await jest.advanceTimersByTimeAsync(0);
    // One statement for what both runs produced in the turn.
    expect(appends.started).toEqual([{ at: 0, runs: ['a', 'b'] }]);
  });

  it('starts the next write no sooner than the spacing after the last, with all that was produced meanwhile', async () => {
    const { appends, start } = setUp();
    start('a');
    await jest.advanceTimersByTimeAsync(0);
    await appends.commit();
    await jest.advanceTimersByTimeAsync(1);
    start('b');
    await jest.advanceTimersByTimeAsync(1);
    start('c');
    await jest.advanceTimersByTimeAsync(WRITE_SPACING_MS - 3);
    expect(appends.started.map((w) => w.runs)).toEqual([['a']]);
    await jest.advanceTimersByTimeAsync(1);
    expect(appends.started).toEqual([
      { at: 0, runs: ['a'] },
      { at: WRITE_SPACING_MS, runs: ['b', 'c'] },
    ]);
  });

  it('does not hold a write back once the spacing has passed since the last one started', async () => {
    const { appends, start } = setUp();
    start('a');
    await jest.advanceTimersByTimeAsync(0);
    await jest.advanceTimersByTimeAsync(WRITE_SPACING_MS + 10);
    await appends.commit();
    const at = performance.now();
    start('b');
    await jest.advanceTimersByTimeAsync(0);
    expect(appends.started.at(-1)).toEqual({ at, runs: ['b'] });
  });
});
