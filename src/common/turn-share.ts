/** The least a piece of work costs: so many pieces of no cost still take turns of their own. */
const MIN_UNITS = 1 / 1024;

/**
 * At most `perTurn` units of work in one turn of the event loop, whoever asks: the others wait, in
 * order, for the next turns. Many streams each writing a slice (replays of stored events) then hold
 * one turn for `perTurn` slices at most, however many they are, and every other callback (a health
 * probe, another route) runs between two turns. A wait, never a refusal.
 *
 * A piece of work may cost several units, or a part of one (a small JSON body's scan); one of
 * `perTurn` units or more has a turn to itself.
 */
export class TurnShare {
  private used = 0;
  private readonly waiting: Array<{ units: number; go: () => void }> = [];
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  /** Resolves when the caller may do `units` of work: in this turn if it has room, else in a later one. */
  take(units = 1): Promise<void> {
    this.schedule();
    const cost = Math.min(Math.max(units, MIN_UNITS), this.perTurn);
    if (this.used + cost <= this.perTurn && !this.waiting.length) {
      this.used += cost;
      return Promise.resolve();
    }
    return new Promise((go) => this.waiting.push({ units: cost, go }));
  }

  /** Pieces of work waiting for a turn. */
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
      while (this.waiting.length && this.used + this.waiting[0].units <= this.perTurn) {
        const next = this.waiting.shift()!;
        this.used += next.units;
        next.go();
      }
      if (this.waiting.length || this.used) this.schedule();
    });
  }
}

/**
 * The share of each turn that work proportional to a large request gets, all requests together: a
 * JSON body's scan, joining and parsing (docs/limits.md#request-bodies), and the start of a model call
 * on a long history. A unit is about a millisecond of such work; a piece of {@link LARGE_WORK_UNITS_PER_TURN}
 * units or more (a large body's parse, a long history's start) has a turn to itself, so however many
 * large requests arrive at once, one turn holds at most one of them.
 */
export const LARGE_WORK_UNITS_PER_TURN = 4;
export const largeWorkTurns = new TurnShare(LARGE_WORK_UNITS_PER_TURN);
