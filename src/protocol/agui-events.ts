import type { RunFinishedOutcome } from './outcomes';
import type { TokenUsage } from './usage';
import { MODEL_FAILURE_CODES } from './model-failure-codes';

/** The AG-UI 1.0 events this service puts on the wire (docs/protocol.md#the-stream), field names exactly as AG-UI. */
export type AguiEvent =
  | { type: 'RUN_STARTED'; timestamp: number; threadId: string; runId: string }
  | {
      type: 'RUN_FINISHED';
      timestamp: number;
      threadId: string;
      runId: string;
      result?: unknown;
      /** AG-UI 1.0, only to a request that declares it (protocol/versions.ts). */
      outcome?: RunFinishedOutcome;
      /** AG-UI 1.0, only to a request that declares it: the run's tokens, one entry per provider and model. */
      usage?: TokenUsage[];
    }
  | { type: 'RUN_ERROR'; timestamp: number; message: string; code: RunErrorCode; usage?: TokenUsage[] }
  | { type: 'STEP_STARTED'; timestamp: number; stepName: string }
  | { type: 'STEP_FINISHED'; timestamp: number; stepName: string }
  | { type: 'TEXT_MESSAGE_START'; timestamp: number; messageId: string; role: 'assistant' }
  | { type: 'TEXT_MESSAGE_CONTENT'; timestamp: number; messageId: string; delta: string }
  | { type: 'TEXT_MESSAGE_END'; timestamp: number; messageId: string }
  | {
      type: 'TOOL_CALL_START';
      timestamp: number;
      toolCallId: string;
      toolCallName: string;
      parentMessageId: string;
    }
  | { type: 'TOOL_CALL_ARGS'; timestamp: number; toolCallId: string; delta: string }
  | { type: 'TOOL_CALL_END'; timestamp: number; toolCallId: string }
  | {
      type: 'TOOL_CALL_RESULT';
      timestamp: number;
      messageId: string;
      toolCallId: string;
      content: string;
      role: 'tool';
    }
  | { type: 'REASONING_START'; timestamp: number; messageId: string }
  | { type: 'REASONING_MESSAGE_START'; timestamp: number; messageId: string; role: 'reasoning' }
  | { type: 'REASONING_MESSAGE_CONTENT'; timestamp: number; messageId: string; delta: string }
  | { type: 'REASONING_MESSAGE_END'; timestamp: number; messageId: string }
  | { type: 'REASONING_END'; timestamp: number; messageId: string };

export type AguiEventType = AguiEvent['type'];

/** Every `RUN_ERROR` code: the one list the type, the OpenAPI enum and the tests are derived from. */
export const RUN_ERROR_CODES = [
  // The model provider failed (docs/usage-and-budgets.md): rate limited, unavailable, too slow, context too long, else MODEL_ERROR.
  ...MODEL_FAILURE_CODES,
  'TOOL_RESULT_TIMEOUT',
  'CANCELLED',
  'STRUCTURED_OUTPUT_INVALID',
  // The owner's token budget was crossed by this run: it ends after the step that crossed it.
  'QUOTA_EXCEEDED',
  'SHUTTING_DOWN',
  // The replica relaying the run drains; the run goes on elsewhere: rejoin at GET /runs/:runId/events.
  'RUN_MOVED',
  'INTERRUPTED',
  // The database is down or not answering: the run cannot be recorded or keep its lease; retry later.
  'SERVICE_UNAVAILABLE',
  'INTERNAL',
] as const;

export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

/**
 * What the translator hands the lifecycle guard: loosely shaped, possibly wrong, never sent as it is.
 * Every field may be missing; the guard decides what reaches the wire.
 */
export type UpstreamEvent =
  | { type: 'TEXT_MESSAGE_START'; messageId?: string }
  | { type: 'TEXT_MESSAGE_CONTENT'; messageId?: string; delta?: string }
  | { type: 'TEXT_MESSAGE_END'; messageId?: string }
  | { type: 'TOOL_CALL_START'; toolCallId?: string; toolCallName?: string; parentMessageId?: string }
  | { type: 'TOOL_CALL_ARGS'; toolCallId?: string; delta?: string }
  /** `args`: the arguments as the engine parsed them, used when the streamed text is not valid JSON. */
  | { type: 'TOOL_CALL_END'; toolCallId?: string; args?: unknown }
  | { type: 'TOOL_CALL_RESULT'; toolCallId?: string; messageId?: string; content?: unknown }
  | { type: 'STEP_STARTED'; stepName?: string }
  | { type: 'STEP_FINISHED'; stepName?: string }
  | { type: 'REASONING_MESSAGE_START'; messageId?: string }
  | { type: 'REASONING_MESSAGE_CONTENT'; messageId?: string; delta?: string }
  | { type: 'REASONING_MESSAGE_END'; messageId?: string };

export const TERMINAL_TYPES: ReadonlySet<string> = new Set(['RUN_FINISHED', 'RUN_ERROR']);
