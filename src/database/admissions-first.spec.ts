import { ADMISSIONS_FIRST_MAX_WAIT_MS, AdmissionsFirst } from './admissions-first';
import { settledNow } from '../../test/support/promises';

/** A claim the test answers when it likes. */
function claim<T>() {
  let answer: (value: T) => void = () => undefined;
  let fail: (err: Error) => void = () => undefined;
  const promise = new Promise<T>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  return { run: () => promise, answer: (v: T) => answer(v), fail: (e: Error) => fail(e) };
}

describe('AdmissionsFirst', () => {
  afterEach(() => jest.useRealTimers());

  it('lets a statement that can wait go at once when no claim is in flight', () => {
    expect(new AdmissionsFirst().turn()).toBeUndefined();
  });

  it('holds such statements while a claim is in flight, and lets them all go when it is answered', async () => {
    const order = new AdmissionsFirst();
    const c = claim<string>();
    const claimed = order.admission(c.run);
    const first = order.turn()!;
    const second = order.turn()!;
    expect(first).toBeInstanceOf(Promise);
    expect(await settledNow(first)).toBe(false);
    c.answer('claimed');
    await expect(claimed).resolves.toBe('claimed');
    expect(await settledNow(first)).toBe(true);
    expect(await settledNow(second)).toBe(true);
    expect(order.turn()).toBeUndefined();
  });

  it('waits for the last of several claims, and a claim that fails counts as answered', async () => {
    const order = new AdmissionsFirst();
    const a = claim<void>();
    const b = claim<void>();
    const claimedA = order.admission(a.run);
    const claimedB = order.admission(b.run);
    const waiting = order.turn()!;
    a.answer();
    await claimedA;
    expect(await settledNow(waiting)).toBe(false);
    b.fail(new Error('THREAD_BUSY'));
    await expect(claimedB).rejects.toThrow('THREAD_BUSY');
    expect(await settledNow(waiting)).toBe(true);
  });

  it(`never holds a statement longer than ${ADMISSIONS_FIRST_MAX_WAIT_MS} ms, however many claims keep coming`, async () => {
    jest.useFakeTimers();
    const order = new AdmissionsFirst();
    const endless = claim<void>();
    void order.admission(endless.run);
    const waiting = order.turn()!;
    jest.advanceTimersByTime(ADMISSIONS_FIRST_MAX_WAIT_MS - 1);
    expect(await settledNow(waiting)).toBe(false);
    jest.advanceTimersByTime(1);
    expect(await settledNow(waiting)).toBe(true);
    // The next one waits its own full time again.
    const next = order.turn()!;
    jest.advanceTimersByTime(ADMISSIONS_FIRST_MAX_WAIT_MS - 1);
    expect(await settledNow(next)).toBe(false);
    endless.answer();
    expect(await settledNow(next)).toBe(true);
  });
});
