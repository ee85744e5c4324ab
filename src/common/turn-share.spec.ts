import { setImmediate as turn } from 'node:timers/promises';
import { TurnShare } from './turn-share';

describe('TurnShare', () => {
  it('gives `perTurn` units a turn; the others get theirs in the next turns, in order', async () => {
    const share = new TurnShare(2);
    const order: number[] = [];
    const units = Array.from({ length: 5 }, (_, i) => share.take().then(() => order.push(i)));
    await Promise.resolve();
    expect(order).toEqual([0, 1]);
    expect(share.queued).toBe(3);
    await turn();
    expect(order).toEqual([0, 1, 2, 3]);
    await turn();
    expect(order).toEqual([0, 1, 2, 3, 4]);
    await Promise.all(units);
    expect(share.queued).toBe(0);
  });

  it('other callbacks run between two turns of units', async () => {
    const share = new TurnShare(1);
    const log: string[] = [];
    const units = Array.from({ length: 3 }, (_, i) => share.take().then(() => log.push(`unit ${i}`)));
    // An I/O-like callback queued now runs before the units of later turns.
    setImmediate(() => log.push('other'));
    await Promise.all(units);
    expect(log.indexOf('other')).toBeGreaterThan(0);
    expect(log.indexOf('other')).toBeLessThan(log.indexOf('unit 2'));
  });

  it('a unit asked in a later turn has the room of that turn', async () => {
    const share = new TurnShare(1);
    await share.take();
    await turn();
    await turn();
    let took = false;
    void share.take().then(() => (took = true));
    await Promise.resolve();
    expect(took).toBe(true);
  });

  it('leaves no timer behind once idle', async () => {
    const share = new TurnShare(3);
    await Promise.all([share.take(), share.take(), share.take(), share.take()]);
    await turn();
    await turn();
    expect(share.queued).toBe(0);
    expect((share as unknown as { scheduled: boolean }).scheduled).toBe(false);
  });
});

describe('TurnShare, pieces of several units', () => {
  it('fits pieces into a turn while they fit; a piece of perTurn units or more has a turn alone', async () => {
    const share = new TurnShare(4);
    const order: string[] = [];
    const pieces = [
      share.take(3).then(() => order.push('a3')),
      share.take(2).then(() => order.push('b2')),
      share.take(2).then(() => order.push('c2')),
      share.take(9).then(() => order.push('d9')),
      share.take(1).then(() => order.push('e1')),
    ];
    await Promise.resolve();
    expect(order).toEqual(['a3']);
    await turn();
    expect(order).toEqual(['a3', 'b2', 'c2']);
    await turn();
    expect(order).toEqual(['a3', 'b2', 'c2', 'd9']);
    await turn();
    expect(order).toEqual(['a3', 'b2', 'c2', 'd9', 'e1']);
    await Promise.all(pieces);
  });

  it('fits pieces of part of a unit by what they add up to: 1/32 of a unit each, 32 a unit', async () => {
    const share = new TurnShare(1);
    const order: number[] = [];
    const pieces = Array.from({ length: 40 }, (_, i) => share.take(1 / 32).then(() => order.push(i)));
    await Promise.resolve();
    expect(order).toHaveLength(32);
    await turn();
    expect(order).toHaveLength(40);
    await Promise.all(pieces);
  });
});
