/**
 * A counting semaphore: at most `size` tasks at once; the others wait their turn, in order. A task
 * given `maxWaitMs` that has not started by then is refused with `refusal()` (nothing of it ran).
 * Used where a task holds something scarce, such as a pooled database connection, and a caller must
 * not hold all of it.
 */
export class Semaphore {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly size: number,
    private readonly refusal: () => Error,
  ) {}

  async run<T>(task: () => Promise<T>, maxWaitMs?: number): Promise<T> {
    if (this.running < this.size) this.running++;
    else await this.turn(maxWaitMs);
    try {
      return await task();
    } finally {
      // The place passes to the next in line, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  private turn(maxWaitMs: number | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const go = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiting.push(go);
      const timer =
        maxWaitMs === undefined
          ? undefined
          : setTimeout(() => {
              this.waiting.splice(this.waiting.indexOf(go), 1);
              reject(this.refusal());
            }, maxWaitMs);
    });
  }
}
