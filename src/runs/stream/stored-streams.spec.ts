import { Chunk, framesAfter } from '../storage/run-events.repository';
import { REPLAY_SLICE_BYTES, sliceOf } from './stored-streams';

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
