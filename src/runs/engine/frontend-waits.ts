import type { ToolResult } from '../../agents/tools/run-tools';
import { isDatabaseUnavailable } from '../../database/database-errors';
import { Metrics } from '../../ops/metrics.service';
import type { RunErrorCode } from '../../protocol/agui-events';
import { FrontendToolResults } from '../tools/frontend-tool-results';
import type { PreparedRun } from '../prepare/run-preparer';
import { ParkCountdowns } from './park-countdowns';
import { DATABASE_UNAVAILABLE } from './run-ending';

/** The run that waits (RunExecution): what its waits stop or park. */
export type WaitingRun = {
  readonly prepared: PreparedRun;
  /** Parks the run on a call whose wait has `remainingMs` left; undefined when nobody parks it. */
  readonly onPark: ((toolCallId: string, remainingMs: number) => void) | undefined;
  /** Stops the run (timeout, database down). */
  stop(code: RunErrorCode, message: string): void;
};

export type FrontendWaitLimits = {
  /** FRONTEND_TOOL_TIMEOUT_MS: past it the run ends TOOL_RESULT_TIMEOUT. */
  timeoutMs: number;
  /** RUN_PARK_AFTER_MS: a wait this long parks the run (0: never). */
  parkAfterMs: number;
};

/**
 * A run's waits for frontend tool results (docs/protocol.md#tools): each bounded by the tool
 * timeout, and, when parking is on, counted down to parking from its call's TOOL_CALL_END shown.
 */
export class FrontendWaits {
  private readonly parks: ParkCountdowns | undefined;

  constructor(
    private readonly run: WaitingRun,
    private readonly results: FrontendToolResults,
    private readonly metrics: Metrics,
    private readonly limits: FrontendWaitLimits,
  ) {
    if (limits.parkAfterMs > 0)
      this.parks = new ParkCountdowns(limits.parkAfterMs, (toolCallId, remainingMs) =>
        this.run.onPark?.(toolCallId, remainingMs),
      );
  }

  /** A call's TOOL_CALL_END was shown: its countdown to parking may start. */
  endShown(toolCallId: string): void {
    this.parks?.shown(toolCallId);
  }

  async wait(toolCallId: string, signal: AbortSignal): Promise<ToolResult> {
    const { timeoutMs, parkAfterMs } = this.limits;
    const timer = setTimeout(() => {
      this.metrics.toolResultTimeouts.inc();
      this.run.stop('TOOL_RESULT_TIMEOUT', `No result for tool call ${toolCallId} within ${timeoutMs} ms`);
    }, timeoutMs);
    const waited = this.metrics.frontendToolWait.startTimer();
    // Waiting long: parked (held nowhere); a posted result wakes it on whichever replica it reaches.
    const stopCountdown =
      parkAfterMs < timeoutMs && this.run.onPark
        ? this.parks?.start(toolCallId, Date.now() + timeoutMs)
        : undefined;
    try {
      const { runId, principal } = this.run.prepared;
      return await this.results.wait(runId, principal.resourceId, toolCallId, signal);
    } catch (err) {
      // Not the tool's failure, so not for the model to see: the run itself cannot go on.
      if (isDatabaseUnavailable(err)) this.run.stop('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
      throw err;
    } finally {
      clearTimeout(timer);
      stopCountdown?.();
      waited();
    }
  }
}
