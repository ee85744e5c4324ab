import { Injectable } from '@nestjs/common';

/** What a run's model stream asks before each part once the run has shown its first content. */
export type Pace = {
  /** The run's first content went by (or the run ended first): it no longer counts as starting. */
  started(): void;
  /** Undefined: go on at once. A promise: go on when it resolves, later in the event loop. */
  turn(): Promise<void> | undefined;
  /** Whether another run is starting now: only a run that starts among others has its stream paced. */
  crowded(): boolean;
};

/**
 * Runs that are starting come first on this instance's CPU. Under a burst (100 runs at once) the
 * runs admitted first used to stream to their end (Mastra's work for every part, the translation,
 * the writes) within the event-loop turn that answered their claim, while the claims of the
 * requests behind them waited for the loop to read their answers: the last runs' first words came
 * after most other runs had finished.
 *
 * While any run is starting (from its request until its model's first content), every run already
 * past its first content takes its next model part only in its turn: each event-loop turn lets
 * every waiting run take one part, after the loop has polled for I/O (new requests, claims
 * answered). Nothing is held back for time: when the loop has nothing else to do the next turn
 * comes at once. With no run starting a part goes on at once, with no hop; a run that started
 * alone is not paced at all (its model stream gets no layer: `Pace.crowded`).
 */
@Injectable()
export class StartsFirst {
  private starting = 0;
  private waiting: Array<() => void> = [];
  private scheduled = false;

  /** A run's start: `started()` (called once, by whichever comes first) ends it. */
  begin(): Pace {
    this.starting++;
    return new RunStart(this);
  }

  /** A start ended (RunStart calls it once). */
  ended(): void {
    this.starting--;
  }

  /** How many runs are starting now. */
  get startingNow(): number {
    return this.starting;
  }

  turn(): Promise<void> | undefined {
    if (this.starting === 0 && !this.waiting.length) return undefined;
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.nextTurn);
      }
    });
  }

  /** One turn: every run waiting now takes one part; those asking again wait for the next turn. */
  private readonly nextTurn = (): void => {
    const waiting = this.waiting;
    this.waiting = [];
    this.scheduled = false;
    for (const resolve of waiting) resolve();
  };
}

/** One run's start, as a small object (one is held per open run). */
class RunStart implements Pace {
  private done = false;

  constructor(private readonly starts: StartsFirst) {}

  started(): void {
    if (this.done) return;
    this.done = true;
    this.starts.ended();
  }

  turn(): Promise<void> | undefined {
    return this.starts.turn();
  }

  crowded(): boolean {
    return this.starts.startingNow > (this.done ? 0 : 1);
  }
}
