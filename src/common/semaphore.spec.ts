import { setImmediate as turn } from 'node:timers/promises';
import { Semaphore } from './semaphore';

/** A task that runs until `finish()`: whether it started, and the promise of its run. */
function task(semaphore: Semaphore, maxWaitMs?: number) {
  let finish: () => void = () => undefined;
  const state = { started: false, finish: () => finish() };
  const done = semaphore.run(
    () =>
      new Promise<string>((resolve) => {
        state.started = true;
        finish = () => resolve('done');
      }),
    maxWaitMs,
  );
  return Object.assign(state, { done });
}

describe('Semaphore', () => {
  it('runs at most `size` tasks at once; the others start in order as places free up', async () => {
    const semaphore = new Semaphore(2, () => new Error('refused'));
    const tasks = [task(semaphore), task(semaphore), task(semaphore), task(semaphore)];
    await turn();
    expect(tasks.map((t) => t.started)).toEqual([true, true, false, false]);
    tasks[1].finish();
    await turn();
    expect(tasks.map((t) => t.started)).toEqual([true, true, true, false]);
    tasks[0].finish();
    tasks[2].finish();
    await turn();
    expect(tasks[3].started).toBe(true);
    tasks[3].finish();
    await expect(Promise.all(tasks.map((t) => t.done))).resolves.toEqual(['done', 'done', 'done', 'done']);
    // Every place was given back: two start at once again.
    const again = [task(semaphore), task(semaphore)];
    await turn();
    expect(again.map((t) => t.started)).toEqual([true, true]);
  });

  it('refuses a task that waited `maxWaitMs` without starting; those behind it keep their turn', async () => {
    const semaphore = new Semaphore(1, () => new Error('busy'));
    const first = task(semaphore);
    const impatient = task(semaphore, 20);
    const patient = task(semaphore);
    await expect(impatient.done).rejects.toThrow('busy');
    expect(impatient.started).toBe(false);
    first.finish();
    await turn();
    expect(patient.started).toBe(true);
    patient.finish();
    await expect(patient.done).resolves.toBe('done');
  });

  it('gives the place back when a task fails', async () => {
    const semaphore = new Semaphore(1, () => new Error('busy'));
    await expect(semaphore.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(semaphore.run(() => Promise.resolve('next'), 10)).resolves.toBe('next');
  });
});
