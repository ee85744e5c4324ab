import { TurnQueue } from './run-scheduler';

describe('TurnQueue (engine starts wait for admissions, but never starve)', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0 }));
  afterEach(() => jest.useRealTimers());

  it('runs queued functions in order, one per event-loop turn, when nothing is being admitted', () => {
    const ran: number[] = [];
    const queue = new TurnQueue(() => false);
    for (let i = 0; i < 3; i++) queue.push(() => ran.push(i));
    expect(ran).toEqual([]);
    jest.advanceTimersToNextTimer();
    expect(ran).toEqual([0]);
    jest.advanceTimersToNextTimer();
    jest.advanceTimersToNextTimer();
    expect(ran).toEqual([0, 1, 2]);
  });

  it('holds them while requests are admitted, and starts them once admission pauses', () => {
    let admitting = true;
    const ran: number[] = [];
    const queue = new TurnQueue(() => admitting, 100);
    queue.push(() => ran.push(Date.now()));
    jest.advanceTimersByTime(50);
    expect(ran).toEqual([]);
    admitting = false;
    jest.advanceTimersByTime(2);
    expect(ran).toHaveLength(1);
    expect(ran[0]).toBeLessThan(100);
  });

  it('under admissions that never pause, starts each one maxWaitMs after it was queued, not later', () => {
    const ran: Array<[number, number]> = [];
    const queue = new TurnQueue(() => true, 100);
    // One queued every 10 ms, for a second: a sustained load.
    for (let i = 0; i < 100; i++) {
      queue.push(() => ran.push([i, Date.now()]));
      jest.advanceTimersByTime(10);
    }
    jest.advanceTimersByTime(200);
    expect(ran.map(([i]) => i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    for (const [i, at] of ran) {
      expect(at).toBeGreaterThanOrEqual(i * 10 + 100);
      expect(at).toBeLessThanOrEqual(i * 10 + 100 + 5);
    }
  });
});
