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
  /** The chunks of each append, as the repository got them. */
  chunks: StoredChunk[][] = [];
  private answers: Array<(ok: boolean) => void> = [];

  readonly repository = {
    append: (chunks: StoredChunk[]) => {
      this.started.push(chunks.map((c) => c.runId));
      this.chunks.push(chunks);
      return new Promise<[]>((resolve, reject) =>
        this.answers.push((ok) => (ok ? resolve([]) : reject(new Error('connection lost')))),
      );
    },
  } as unknown as RunEventsRepository;

  /** The oldest append in flight commits (and the writer has had a turn to go on). */
  async commitOne(): Promise<void> {
    this.answers.shift()?.(true);
    await turn();
    await turn();
  }

  /** The oldest append in flight fails (it may have committed: the writer cannot tell). */
  async failOne(): Promise<void> {
    this.answers.shift()?.(false);
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
    (log) => superseded.push(log.runId),
  );
  const superseded: string[] = [];
  /** A run whose log the writer stores: its RUN_STARTED is framed as soon as it is sent. */
  const start = (runId: string) => {
    const events$ = new Subject<AguiEvent>();
    const log = new RunLog(runId, {
      graceMs: 0,
      abandon: () => undefined,
      store: writer,
      attempt: 1,
    });
    logs.set(runId, log);
    log.start(events$);
    events$.next({ type: 'RUN_STARTED', timestamp: 1, threadId: 't', runId });
    return { log, events$ };
  };
  return { appends, start, writer, logs, superseded };
}

/** A delta of the run's text: its first content, framed at once. */
const delta = (text: string): AguiEvent => ({
  type: 'TEXT_MESSAGE_CONTENT',
  timestamp: 1,
  messageId: 'm',
  delta: text,
});

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

describe('RunLogWriter: an event stored once', () => {
  it('writes a chunk first as a plain insert, and after a failed write as one that may meet it stored', async () => {
    const { appends, start, writer } = setUp();
    const { events$ } = start('a');
    await turn();
    await appends.failOne();
    writer.retry();
    await turn();
    await appends.commitOne();
    events$.next(delta('Hi'));
    await turn();
    expect(appends.chunks.map((write) => write.map((c) => [c.first, c.last, c.firstTry]))).toEqual([
      [[1, 1, true]],
      // The failed write may have committed: the retry carries the same start, and may extend it.
      [[1, 1, false]],
      [[2, 2, true]],
    ]);
  });
});

describe("RunLogWriter: a run's end stores its log's tail", () => {
  it('gives the end what the log framed and did not store, and writes none of it itself', async () => {
    const { appends, start, writer } = setUp();
    const { log } = start('a');
    const tail = await writer.tail(log);
    expect(tail?.chunk).toMatchObject({ first: 1, last: 1, terminal: false });
    await turn();
    expect(appends.started).toEqual([]);
    // Nothing is sent before the end's statement says it is stored.
    expect(log.storedSeq).toBe(0);
    tail!.settle('stored');
    expect(log.storedSeq).toBe(1);
    expect(log.unstored).toEqual([]);
  });

  it("waits for the log's write in flight, then takes what was framed after it", async () => {
    const { appends, start, writer } = setUp();
    const { log, events$ } = start('a');
    await turn();
    expect(appends.started).toEqual([['a']]);
    events$.next(delta('Hi'));
    let taken: Awaited<ReturnType<RunLogWriter['tail']>> | null = null;
    void writer.tail(log).then((tail) => (taken = tail));
    await turn();
    expect(taken).toBeNull();
    await appends.commitOne();
    expect(taken!.chunk).toMatchObject({ first: 2, last: 2 });
    // The writer left the delta to the end: no second append.
    expect(appends.started).toEqual([['a']]);
  });

  it('takes nothing from a log whose write failed: the end goes without it, the writer tries again', async () => {
    const { start, writer } = setUp();
    const { log } = start('a');
    const first = await writer.tail(log);
    first!.settle('failed');
    expect(log.failing).toBe(true);
    expect(await writer.tail(log)).toBeUndefined();
    expect(log.unstored.map((c) => c.first)).toEqual([1]);
  });

  it('stops a log whose end found another claim holding the run', async () => {
    const { start, writer, logs, superseded } = setUp();
    const { log } = start('a');
    const tail = await writer.tail(log);
    tail!.settle('superseded');
    expect(superseded).toEqual(['a']);
    expect(logs.has('a')).toBe(false);
  });
});
