import { Logger } from '@nestjs/common';
import type { AppConfig } from '../../config/config';
import type { Metrics } from '../../ops/metrics.service';
import { Chunk, framesAfter, RunEventsRepository } from '../storage/run-events.repository';
import type { Run } from '../storage/run.entity';
import type { RunsRepository } from '../storage/runs.repository';
import type { RunWatches } from './run-watches';
import { SseConnection, SseWriter } from './sse-writer';
import { REPLAY_SLICE_BYTES, sliceOf, StoredStreams } from './stored-streams';

const frame = (seq: number, size = 10) => `id: ${seq}\ndata: ${'x'.repeat(size)}\n\n`;
const chunk = (first: number, last: number, size = 10, terminal = false): Chunk => ({
  first,
  last,
  frames: Array.from({ length: last - first + 1 }, (_, i) => frame(first + i, size)).join(''),
  terminal,
});

describe('sliceOf: a slice of a page of stored chunks, as one chunk', () => {
  it('joins consecutive chunks up to REPLAY_SLICE_BYTES, the frames unchanged and in order', () => {
    const size = 1000;
    const chunks = Array.from({ length: 200 }, (_, i) => chunk(i + 1, i + 1, size, i === 199));
    const slices: Chunk[] = [];
    for (let from = 0; from < chunks.length;) {
      const { chunk: slice, next } = sliceOf(chunks, from);
      expect(slice.frames.length).toBeLessThanOrEqual(REPLAY_SLICE_BYTES);
      slices.push(slice);
      from = next;
    }
    expect(slices.length).toBeGreaterThan(1);
    expect(slices.map((s) => s.frames).join('')).toBe(chunks.map((c) => c.frames).join(''));
    expect(slices.map((s) => [s.first, s.last])).toEqual(
      slices.map((s, i) => [i ? slices[i - 1].last + 1 : 1, s.last]),
    );
    expect(slices.map((s) => s.terminal)).toEqual(slices.map((_, i) => i === slices.length - 1));
  });

  it('a chunk larger than a slice goes alone', () => {
    const chunks = [chunk(1, 1), chunk(2, 2, REPLAY_SLICE_BYTES), chunk(3, 3)];
    expect(sliceOf(chunks, 0)).toEqual({ chunk: chunks[0], next: 1 });
    expect(sliceOf(chunks, 1)).toEqual({ chunk: chunks[1], next: 2 });
  });

  it('stops at a gap, which the writer then sees as one', () => {
    const chunks = [chunk(1, 2), chunk(5, 6)];
    expect(sliceOf(chunks, 0)).toEqual({ chunk: chunks[0], next: 1 });
  });

  it('a joined slice still cuts at what a reader has (framesAfter)', () => {
    const { chunk: slice } = sliceOf([chunk(1, 3), chunk(4, 6)], 0);
    expect(framesAfter(slice, 4)).toBe(frame(5) + frame(6));
  });
});

describe('StoredStreams.follow', () => {
  /** A client's connection whose socket takes nothing until `drain()`: what it was written, and whether it ended. */
  class SlowConnection {
    finished = false;
    waitingForDrain = true;
    reader: SseWriter | undefined;
    written = '';
    ended = false;
    private waiters: Array<() => void> = [];
    readonly options = { heartbeatMs: 15_000, maxQueuedBytes: 1000, writeTimeoutMs: 60_000 };
    write(frames: string) {
      this.written += frames;
    }
    writeNow(frames: string) {
      this.written += frames;
    }
    end(tail = '') {
      this.written += tail;
      this.ended = this.finished = true;
    }
    drained(): Promise<void> {
      return this.waitingForDrain ? new Promise((resolve) => this.waiters.push(resolve)) : Promise.resolve();
    }
    drain() {
      this.waitingForDrain = false;
      this.reader?.flushQueued();
      this.waiters.splice(0).forEach((resolve) => resolve());
      this.reader?.caughtUp();
    }
  }

  it('does not end a follower that falls behind on the announced end: storage catches it up, then ends it', async () => {
    const stored = [chunk(1, 1), chunk(2, 2, 2000, true)];
    const events = {
      page: (_runId: string, after: number) =>
        Promise.resolve({ chunks: stored.filter((c) => c.last > after), more: false }),
    };
    const streams = new StoredStreams(
      { database: { poolSize: 4 } } as AppConfig,
      events as unknown as RunEventsRepository,
      {} as RunsRepository,
      { streamCatchUps: { inc: () => undefined } } as unknown as Metrics,
      { announce: () => undefined } as unknown as RunWatches,
      new Map(),
      new Logger('test'),
    );
    const connection = new SlowConnection();
    const writer = new SseWriter(connection as unknown as SseConnection, 1);
    const following = streams.follow({ id: 'r', status: 'running' } as Run, writer);
    // The run's end is announced with its frames, more than the stream may queue behind its socket.
    await new Promise((resolve) => setImmediate(resolve));
    streams.announced(`2 2 t r\n${stored[1].frames}`);
    expect({ behind: writer.isBehind, ended: connection.ended }).toEqual({ behind: true, ended: false });
    connection.drain();
    await following;
    expect({ ended: connection.ended, written: connection.written }).toEqual({
      ended: true,
      written: stored[1].frames,
    });
  });
});
