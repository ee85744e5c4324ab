/**
 * At most `perTurn` units of work in one turn of the event loop, whoever asks: the others wait, in
 * order, for the next turns. Many streams each writing a slice (replays of stored events) then hold
 * one turn for `perTurn` slices at most, however many they are, and every other callback (a health
 * probe, another route) runs between two turns. A wait, never a refusal.
 */
export class TurnShare {
  private used = 0;
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  /** Resolves when the caller may do one unit of work: in this turn if it has room, else in a later one. */
  take(): Promise<void> {
    this.schedule();
    if (this.used < this.perTurn && !this.waiting.length) {
      this.used++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Units waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Each turn (the check phase, after the I/O of the turn) starts with its whole share. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.used = 0;
      while (this.used < this.perTurn && this.waiting.length) {
        this.used++;
        this.waiting.shift()!();
      }
      if (this.waiting.length || this.used) this.schedule();
    });
  }
}
