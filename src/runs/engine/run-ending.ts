import type { Logger } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { isDatabaseUnavailable } from '../../database/database-errors';
import { endWithError } from '../../ops/tracing';
import type { RunErrorCode } from '../../protocol/agui-events';
import type { RunFinishedOutcome } from '../../protocol/outcomes';
import type { TokenUsage } from '../../protocol/usage';
import type { ApprovalRequest } from '../storage/interrupts.repository';
import type { RunEnd } from '../storage/runs.repository';
import type { Outcome } from '../events/mastra-to-agui';
import type { PreparedRun } from '../prepare/run-preparer';

export const DATABASE_UNAVAILABLE = 'The database is unavailable; retry later';

/** Why a run stopped when it was not the model's doing. */
export class StopReason extends Error {
  constructor(
    readonly code: RunErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** How a run ends: its record, and its terminal event's error (none: RUN_FINISHED). */
export type Ending = {
  end: RunEnd;
  terminal: { code: RunErrorCode; message: string; outcome?: RunFinishedOutcome } | undefined;
  result?: unknown;
  /** Frontend calls left for the client to answer in its next run (ag-ui). */
  pending?: string[];
  /** Calls stopped at for a person's approval. */
  approvals?: ApprovalRequest[];
};

/** What the decision needs of the run. */
export type EndingContext = {
  run: PreparedRun;
  signal: AbortSignal;
  log: Logger;
  unanswered: () => { pending: string[]; approvals: ApprovalRequest[] };
};

/**
 * How a run ends now that its stream stopped: told to stop (its StopReason), the database gone, a
 * failure of ours, or the engine's own outcome (finished, with what is left unanswered; the model's
 * error; aborted).
 */
export function decideEnding(
  { run, signal, log, unanswered }: EndingContext,
  outcome: Outcome | undefined,
  failure: unknown,
): Ending {
  if (signal.aborted) {
    const reason =
      signal.reason instanceof StopReason
        ? signal.reason
        : new StopReason('CANCELLED', 'The run was cancelled');
    return {
      end: {
        status: reason.code === 'CANCELLED' ? 'cancelled' : 'error',
        code: reason.code,
        message: reason.message,
      },
      terminal: { code: reason.code, message: reason.message, ...cancelledOutcome(run, reason.code) },
    };
  }
  if (failure !== undefined && isDatabaseUnavailable(failure)) {
    log.warn(`run ${run.runId}: database unavailable: ${(failure as Error).message}`);
    return failed('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE);
  }
  if (failure !== undefined) {
    log.error(
      failure instanceof Error ? (failure.stack ?? failure.message) : 'run failed',
      `run ${run.runId}`,
    );
    return failed('INTERNAL', 'The run failed unexpectedly');
  }
  switch (outcome?.kind) {
    case 'finished': {
      const { pending, approvals } = unanswered();
      return {
        end: { status: 'finished' },
        terminal: undefined,
        result: outcome.result,
        ...(pending.length ? { pending } : {}),
        ...(approvals.length ? { approvals } : {}),
      };
    }
    case 'error':
      log.warn(
        `run ${run.runId}: the model failed: ${outcome.model ? `${outcome.model.code} ${outcome.model.detail}` : outcome.message}`,
      );
      return failed(
        outcome.structuredOutput ? 'STRUCTURED_OUTPUT_INVALID' : (outcome.model?.code ?? 'MODEL_ERROR'),
        outcome.message,
      );
    case 'aborted': {
      const ending = failed('CANCELLED', 'The run was cancelled', 'cancelled');
      return { ...ending, terminal: { ...ending.terminal!, ...cancelledOutcome(run, 'CANCELLED') } };
    }
    default:
      return failed('MODEL_ERROR', 'The model stream ended unexpectedly');
  }
}

export function failed(code: RunErrorCode, message: string, status: 'error' | 'cancelled' = 'error'): Ending {
  return { end: { status, code, message }, terminal: { code, message } };
}

/** The terminal error for a record that could not be written. */
export function unrecorded(err: unknown): { code: RunErrorCode; message: string } {
  return isDatabaseUnavailable(err)
    ? { code: 'SERVICE_UNAVAILABLE', message: DATABASE_UNAVAILABLE }
    : { code: 'INTERNAL', message: 'The run could not be recorded' };
}

/** An AG-UI 1.x run of an `ag-ui` client that was cancelled ends RUN_FINISHED outcome cancelled, not RUN_ERROR. */
function cancelledOutcome(run: PreparedRun, code: RunErrorCode): { outcome?: RunFinishedOutcome } {
  return code === 'CANCELLED' && run.agUi1 && run.clientProtocol === 'ag-ui'
    ? { outcome: { type: 'cancelled' } }
    : {};
}

/**
 * Ends the run's span with its outcome (an error code on a finished record counts as an error) and
 * its tokens over all its model calls (each chat span has its own).
 */
export function endRunSpan(
  span: Span,
  status: RunEnd['status'],
  code: RunErrorCode | undefined,
  usage: TokenUsage[] | undefined,
): void {
  const outcome = code && status === 'finished' ? 'error' : status;
  if (usage) {
    span.setAttribute('gen_ai.usage.input_tokens', sum(usage, 'inputTokens'));
    span.setAttribute('gen_ai.usage.output_tokens', sum(usage, 'outputTokens'));
  }
  span.setAttribute('io_bridge.run.outcome', outcome);
  if (code) span.setAttribute('io_bridge.run.error_code', code);
  if (outcome === 'error') endWithError(span, code ?? 'error');
  else span.end();
}

const sum = (usage: TokenUsage[], key: 'inputTokens' | 'outputTokens') =>
  usage.reduce((total, entry) => total + (entry[key] ?? 0), 0);
