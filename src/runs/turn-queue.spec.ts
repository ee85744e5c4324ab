import { TurnQueue } from './runs.service';

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

  it('after waiting maxWaitMs, runs every queued function one turn apart even while admissions go on', () => {
    const ran: number[] = [];
    const queue = new TurnQueue(() => true, 100);
    for (let i = 0; i < 5; i++) queue.push(() => ran.push(Date.now()));
    jest.advanceTimersByTime(99);
    expect(ran).toEqual([]);
    jest.advanceTimersByTime(10);
    // All five, not one per 100 ms.
    expect(ran).toHaveLength(5);
    expect(ran[4] - ran[0]).toBeLessThan(100);
    // The next function pushed while admissions go on waits again.
    queue.push(() => ran.push(Date.now()));
    jest.advanceTimersByTime(50);
    expect(ran).toHaveLength(5);
    jest.advanceTimersByTime(60);
    expect(ran).toHaveLength(6);
  });
});
