import { setImmediate as turn } from 'node:timers/promises';
import { Subject } from 'rxjs';
import { AguiEvent } from '../../protocol/agui-events';
import { Chunk, framesAfter, parseAnnouncement } from '../storage/run-events.repository';
import { frame, parseFrames } from '../events/frames';
import { FrameSink, RunLog } from './run-log';

const started: AguiEvent = { type: 'RUN_STARTED', timestamp: 1, threadId: 't', runId: 'r' };
const text = (delta: string): AguiEvent => ({
  type: 'TEXT_MESSAGE_CONTENT',
  timestamp: 2,
  messageId: 'm',
  delta,
});
const finished: AguiEvent = { type: 'RUN_FINISHED', timestamp: 3, threadId: 't', runId: 'r' };
const step: AguiEvent = { type: 'STEP_STARTED', timestamp: 2, stepName: 'step-1' };
const textStart: AguiEvent = { type: 'TEXT_MESSAGE_START', timestamp: 2, messageId: 'm', role: 'assistant' };

/** A sink that keeps what it is given. */
class Collected implements FrameSink {
  chunks: Chunk[] = [];
  ended = false;
  isBehind = false;
  /** Falls behind (drops the chunk) when a push would take it past this many chunks. */
  constructor(private readonly room = Infinity) {}
  push(chunk: Chunk): void {
    if (this.isBehind) return;
    if (this.chunks.length >= this.room) this.isBehind = true;
    else this.chunks.push(chunk);
  }
  unlogged: string | undefined;
  end(unlogged?: string): void {
    this.ended = true;
    this.unlogged = unlogged;
  }
  get frames(): string {
    return this.chunks.map((c) => c.frames).join('');
  }
}

function openLog(graceMs = 0) {
  const events$ = new Subject<AguiEvent>();
  const abandoned: number[] = [];
  const produced: number[] = [];
  const log = new RunLog('r', {
    graceMs,
    abandon: () => abandoned.push(Date.now()),
    store: { produced: (l) => produced.push(l.seq), tail: () => Promise.resolve(undefined) },
    attempt: 1,
  });
  return { log, events$, abandoned, produced };
}

describe('RunLog', () => {
  it("begins with the chunk its run's claim stored: its first reader gets it at once, no write is asked for it, and the events go on after it", () => {
    const begun: Chunk = { first: 1, last: 1, frames: frame(1, started), terminal: false };
    const produced: number[] = [];
    const events$ = new Subject<AguiEvent>();
    const log = new RunLog('r', {
      graceMs: 0,
      abandon: () => undefined,
      store: { produced: (l) => produced.push(l.seq), tail: () => Promise.resolve(undefined) },
      begun,
      attempt: 1,
    });
    const sink = new Collected();
    expect(log.covers(0)).toBe(true);
    log.attach(sink, 0);
    log.start(events$);
    expect(sink.chunks).toEqual([begun]);
    expect(produced).toEqual([]);
    events$.next(text('Hi'));
    expect(log.unstored).toEqual([{ first: 2, last: 2, frames: frame(2, text('Hi')), terminal: false }]);
    expect(produced).toEqual([2]);
    // A reader that has RUN_STARTED already is not sent it again.
    const later = new Collected();
    log.attach(later, 1);
    expect(later.chunks).toEqual([]);
  });

  it('frames every event up to the first content at once, then one chunk per event-loop turn with deltas of one message merged', async () => {
    const { log, events$, produced } = openLog();
    log.start(events$);
    events$.next(started);
    expect(log.unstored).toEqual([{ first: 1, last: 1, frames: frame(1, started), terminal: false }]);
    events$.next(step);
    events$.next(textStart);
    events$.next(text('Hel'));
    // The first words do not wait for the end of the turn (it may be running many engines).
    expect(log.unstored.map((c) => [c.first, c.last])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
    ]);
    events$.next(text('lo'));
    events$.next(text(' you'));
    expect(log.unstored).toHaveLength(4);
    await turn();
    expect(log.unstored[4]).toEqual({ first: 5, last: 5, frames: frame(5, text('lo you')), terminal: false });
    events$.next(text('!'));
    events$.next(finished);
    events$.complete();
    expect(log.unstored[5]).toEqual({
      first: 6,
      last: 7,
      frames: frame(6, text('!')) + frame(7, finished),
      terminal: true,
    });
    expect(log.complete).toBe(true);
    expect(produced).toEqual([1, 2, 3, 4, 5, 7]);
    expect(parseFrames(log.unstored.map((c) => c.frames).join('')).map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'RUN_FINISHED',
    ]);
  });

  it('frames a first tool call at once, as a first text', () => {
    const { log, events$ } = openLog();
    log.start(events$);
    events$.next(started);
    events$.next({
      type: 'TOOL_CALL_START',
      timestamp: 2,
      toolCallId: 'c',
      toolCallName: 'add',
      parentMessageId: 'm',
    });
    events$.next({ type: 'TOOL_CALL_ARGS', timestamp: 2, toolCallId: 'c', delta: '{}' });
    expect(parseFrames(log.unstored.map((c) => c.frames).join('')).map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
    ]);
  });

  it('sends readers only what is stored, and ends them once the terminal event is', async () => {
    const { log, events$ } = openLog();
    const first = new Collected();
    log.attach(first, 0);
    log.start(events$);
    events$.next(started);
    events$.next(text('a'));
    await turn();
    expect(first.chunks).toEqual([]);
    log.stored(1);
    expect(first.chunks.map((c) => [c.first, c.last])).toEqual([[1, 1]]);
    expect(log.unstored.map((c) => c.first)).toEqual([2]);
    // What was sent stays a moment, for a reader that just read storage.
    expect(log.covers(0)).toBe(true);
    const late = new Collected();
    log.attach(late, 1);
    events$.next(finished);
    events$.complete();
    expect(first.ended).toBe(false);
    log.stored(3);
    for (const sink of [first, late]) {
      expect(sink.chunks.map((c) => c.last)).toContain(3);
      expect(sink.ended).toBe(true);
    }
    expect(first.frames).toBe(frame(1, started) + frame(2, text('a')) + frame(3, finished));
    expect(late.frames).toBe(frame(2, text('a')) + frame(3, finished));
    const after = new Collected();
    log.attach(after, 3);
    expect(after.chunks).toEqual([]);
    expect(after.ended).toBe(true);
  });

  it('neither ends nor keeps a reader that falls behind on the chunks memory holds: its owner catches it up from storage', () => {
    for (const complete of [true, false]) {
      const { log, events$ } = openLog();
      log.start(events$);
      events$.next(started);
      log.stored(1);
      events$.next(text('a'));
      log.stored(2);
      if (complete) {
        events$.next(finished);
        events$.complete();
        log.stored(3);
      }
      // Its socket takes one chunk of those memory holds, then the stream drops what follows.
      const slow = new Collected(1);
      log.attach(slow, 0);
      expect({ complete, behind: slow.isBehind, ended: slow.ended }).toEqual({
        complete,
        behind: true,
        ended: false,
      });
      // Not kept: had it been, it would get the next chunk stored once it took chunks again.
      slow.isBehind = false;
      events$.next(step);
      log.stored(log.seq);
      expect(slow.chunks.map((c) => c.last)).toEqual([1]);
    }
  });

  it('keeps the chunks it sent for a second: a reader further back reads storage', async () => {
    // The clock only: the log still frames a chunk per turn of the real event loop.
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const { log, events$ } = openLog();
      log.start(events$);
      events$.next(started);
      events$.next(text('first'));
      log.stored(log.seq);
      expect(log.covers(0)).toBe(true);
      jest.advanceTimersByTime(1000);
      events$.next(step);
      await turn();
      log.stored(log.seq);
      expect(log.covers(0)).toBe(true);
      jest.advanceTimersByTime(1);
      log.stored(log.seq);
      expect(log.covers(log.seq - 1)).toBe(true);
      expect(log.covers(0)).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends its readers with the unstored events without ids when storing fails once the log is complete', () => {
    const { log, events$ } = openLog();
    const sink = new Collected();
    log.attach(sink, 0);
    log.start(events$);
    events$.next(started);
    log.stored(1);
    events$.next(text('a'));
    log.storeFailed();
    expect(sink.ended).toBe(false);
    events$.next(finished);
    events$.complete();
    // Storing is failing: the end goes out without waiting for the database.
    expect(sink.ended).toBe(true);
    expect(sink.unlogged).toBe(`data: ${JSON.stringify(text('a'))}\n\ndata: ${JSON.stringify(finished)}\n\n`);
    expect(sink.frames).toBe(frame(1, started));
  });

  it('ends its readers without ids at once when the run ended because the database is unavailable', () => {
    const { log, events$ } = openLog();
    const sink = new Collected();
    log.attach(sink, 0);
    log.start(events$);
    events$.next(started);
    log.stored(1);
    const error: AguiEvent = {
      type: 'RUN_ERROR',
      timestamp: 3,
      code: 'SERVICE_UNAVAILABLE',
      message: 'down',
    };
    events$.next(error);
    expect(sink.ended).toBe(true);
    expect(sink.unlogged).toBe(`data: ${JSON.stringify(error)}\n\n`);
    const other = openLog();
    const waits = new Collected();
    other.log.attach(waits, 0);
    other.log.start(other.events$);
    other.events$.next({ type: 'RUN_ERROR', timestamp: 3, code: 'MODEL_ERROR', message: 'no' });
    expect(waits.ended).toBe(false);
  });

  it('abandons the run at once when its last reader leaves without a grace period, never while one reads', () => {
    const { log, events$, abandoned } = openLog(0);
    log.start(events$);
    const one = log.addReader();
    const two = log.addReader();
    one();
    one();
    expect(abandoned).toHaveLength(0);
    two();
    expect(abandoned).toHaveLength(1);
  });

  it('with a grace period, abandons only if nobody came back within it', async () => {
    jest.useFakeTimers();
    try {
      const { log, events$, abandoned } = openLog(1000);
      log.start(events$);
      log.addReader()();
      jest.advanceTimersByTime(900);
      const back = log.addReader();
      jest.advanceTimersByTime(5000);
      expect(abandoned).toHaveLength(0);
      back();
      jest.advanceTimersByTime(999);
      expect(abandoned).toHaveLength(0);
      jest.advanceTimersByTime(1);
      expect(abandoned).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
    await turn();
  });

  it('never abandons a run whose log is complete', () => {
    const { log, events$, abandoned } = openLog(0);
    const release = log.addReader();
    log.start(events$);
    events$.next(started);
    events$.next(finished);
    events$.complete();
    release();
    expect(abandoned).toHaveLength(0);
  });
});

describe('framesAfter', () => {
  const chunk: Chunk = {
    first: 5,
    last: 7,
    frames: frame(5, text('a')) + frame(6, text('b\n\nid: 7\n')) + frame(7, finished),
    terminal: true,
  };

  it('cuts a chunk at the frame after the position, whatever the JSON holds', () => {
    expect(framesAfter(chunk, 4)).toBe(chunk.frames);
    expect(framesAfter(chunk, 5)).toBe(frame(6, text('b\n\nid: 7\n')) + frame(7, finished));
    expect(framesAfter(chunk, 6)).toBe(frame(7, finished));
    expect(framesAfter(chunk, 7)).toBe('');
    expect(framesAfter(chunk, 100)).toBe('');
  });
});

describe('parseAnnouncement', () => {
  it('reads the chunk a write announced, frames included or not, whatever the run id holds', () => {
    const frames = frame(3, text('a b')) + frame(4, finished);
    expect(parseAnnouncement(`3 4 t run with spaces\n${frames}`)).toEqual({
      runId: 'run with spaces',
      chunk: { first: 3, last: 4, terminal: true, frames },
    });
    expect(parseAnnouncement('3 4 f run-1')).toEqual({ runId: 'run-1' });
  });
});
