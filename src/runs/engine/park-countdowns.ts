/**
 * When a run waiting for a frontend tool is parked (RUN_PARK_AFTER_MS): each call's countdown starts
 * once its TOOL_CALL_END was shown, not when the tool began to wait. Mastra runs the tool as soon as
 * the model made the call, while the call's end waits for its registration (a statement that took
 * seconds with 50 runs starting at once): a run parked then has its engine stopped with that end
 * still on its way, and its clients saw it only after the wake (bench/parked-bench.ts).
 */
export class ParkCountdowns {
  /** Calls whose TOOL_CALL_END was shown (made on first use). */
  private ended: Set<string> | undefined;
  /** Waits whose call's end is not shown yet: call → what starts its countdown. */
  private waiting: Map<string, () => void> | undefined;

  constructor(
    private readonly afterMs: number,
    /** Parks the run on `toolCallId`, whose wait has `remainingMs` left. */
    private readonly park: (toolCallId: string, remainingMs: number) => void,
  ) {}

  /**
   * A TOOL_CALL_END about to go out: a countdown started now fires in a later turn, after the event
   * reached the run's log (which stores what it framed before the run is parked).
   */
  shown(toolCallId: string): void {
    (this.ended ??= new Set()).add(toolCallId);
    const start = this.waiting?.get(toolCallId);
    this.waiting?.delete(toolCallId);
    start?.();
  }

  /** The tool waits for its result until `deadline` (Date.now()); the returned function stops the countdown. */
  start(toolCallId: string, deadline: number): () => void {
    let timer: NodeJS.Timeout | undefined;
    const countdown = () => {
      timer = setTimeout(() => {
        const remainingMs = deadline - Date.now();
        // Past the deadline the wait's own timeout ends the run.
        if (remainingMs > 0) this.park(toolCallId, remainingMs);
      }, this.afterMs);
    };
    if (this.ended?.has(toolCallId)) countdown();
    else (this.waiting ??= new Map()).set(toolCallId, countdown);
    return () => {
      clearTimeout(timer);
      this.waiting?.delete(toolCallId);
    };
  }
}
