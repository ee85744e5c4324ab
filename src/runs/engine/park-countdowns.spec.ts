import { ParkCountdowns } from './park-countdowns';

describe('ParkCountdowns', () => {
  let parked: Array<[string, number]>;
  let parks: ParkCountdowns;
  beforeEach(() => {
    jest.useFakeTimers({ now: 0 });
    parked = [];
    parks = new ParkCountdowns(200, (id, remainingMs) => parked.push([id, remainingMs]));
  });
  afterEach(() => jest.useRealTimers());

  it("counts from the call's TOOL_CALL_END shown, not from the start of the wait", () => {
    parks.start('call-1', 10_000);
    jest.advanceTimersByTime(5_000);
    expect(parked).toEqual([]);
    parks.shown('call-1');
    jest.advanceTimersByTime(199);
    expect(parked).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(parked).toEqual([['call-1', 4_800]]);
  });

  it('counts at once when the end was shown before the wait', () => {
    parks.shown('call-1');
    parks.start('call-1', 10_000);
    jest.advanceTimersByTime(200);
    expect(parked).toEqual([['call-1', 9_800]]);
  });

  it('does not park a wait that ended, nor one past its deadline', () => {
    const stop = parks.start('call-1', 10_000);
    stop();
    parks.shown('call-1');
    parks.start('call-2', 100);
    parks.shown('call-2');
    jest.advanceTimersByTime(1_000);
    expect(parked).toEqual([]);
  });
});
