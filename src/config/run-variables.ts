import { z } from 'zod';
import { bool, int, Variable } from './variable';

// What a client may ask of a run and what a run may hold: request limits, a run's timing and
// streams, each owner's fair share, and the history the model sees. Each group keeps its place in
// docs/configuration.md: config.ts spreads the groups in the page's order.

/** A run request: its default agent, its heartbeat, and the limits of its body (docs/limits.md). */
export const REQUEST_VARIABLES = {
  DEFAULT_AGENT_ID: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .optional(),
    at: 'defaultAgentId',
    doc: 'the agent used when `forwardedProps.agentId` is absent',
    unset: 'unset: `assistant`, or the first agent of `MASTRA_ENTRY`',
  },
  HEARTBEAT_MS: {
    schema: int(10, 600_000).default(15_000),
    at: 'heartbeatMs',
    doc: '`: ping` comment on an idle stream',
  },
  MAX_BODY_BYTES: {
    schema: int(1024, 64 * 1024 * 1024).default(4 * 1024 * 1024),
    at: 'limits.maxBodyBytes',
    doc: 'the largest request body',
  },
  MAX_MESSAGES: {
    schema: int(1, 100_000).default(1000),
    at: 'limits.maxMessages',
    doc: 'messages per run request',
  },
  MAX_TOOLS: { schema: int(0, 1000).default(128), at: 'limits.maxTools', doc: 'tools per run request' },
  MAX_CONTEXT: {
    schema: int(0, 10_000).default(128),
    at: 'limits.maxContext',
    doc: '`context` entries per run request',
  },
  MAX_CONTENT_PARTS: {
    schema: int(1, 10_000).default(64),
    at: 'limits.maxContentParts',
    doc: 'content parts per message of a run request',
  },
  MAX_FORWARDED_PROPS_KEYS: {
    schema: int(1, 100_000).default(1000),
    at: 'limits.maxForwardedPropsKeys',
    doc: 'keys in `forwardedProps` of a run request, at any depth (413 `PAYLOAD_TOO_LARGE`)',
  },
  MAX_JSON_VALUES: {
    schema: int(100, 10_000_000).default(20_000),
    at: 'limits.maxJsonValues',
    doc: "JSON values (objects, arrays, strings, numbers…) in one request body, counted before it is validated (413 `PAYLOAD_TOO_LARGE`): it bounds a request's validation work",
  },
  MAX_JSON_DEPTH: {
    schema: int(2, 1000).default(64),
    at: 'limits.maxJsonDepth',
    doc: 'nesting levels of a request body (400 `VALIDATION_FAILED`)',
  },
  MAX_STRING_LENGTH: {
    schema: int(1000, 64 * 1024 * 1024).default(1_000_000),
    at: 'limits.maxStringLength',
    doc: 'characters in one string of a request body (413 `PAYLOAD_TOO_LARGE`)',
  },
  MAX_STEPS: {
    schema: int(1, 100).default(10),
    at: ['limits.maxSteps', 'ceilings.maxSteps'],
    doc: 'model steps per run, and the ceiling of `forwardedProps.modelSettings.maxSteps`',
  },
} as const satisfies Record<string, Variable>;

/** A run: its tools' timeouts, parking, leases and retries, its stored events and readers, fair shares. */
export const RUN_VARIABLES = {
  FRONTEND_TOOL_TIMEOUT_MS: {
    schema: int(1, 86_400_000).default(300_000),
    at: 'frontendToolTimeoutMs',
    doc: 'how long a run waits for a frontend tool result (`RUN_ERROR TOOL_RESULT_TIMEOUT` after)',
  },
  TOOL_TIMEOUT_MS: {
    schema: int(0, 86_400_000).default(60_000),
    at: 'tools.timeoutMs',
    doc: "how long a server tool call (an agent's own tool or an MCP server's) may take: past it the call ends in `TOOL_CALL_RESULT` with an error the model reads, and the run goes on (`0`: no limit)",
  },
  MAX_TOOL_RESULT_BYTES: {
    schema: int(0, 64 * 1024 * 1024).default(131_072),
    at: 'tools.maxResultBytes',
    doc: 'a server tool result longer than this (as JSON, in bytes) reaches the model and the client cut to its first bytes, followed by a line that says so (`0`: never cut)',
  },
  RUN_PARK_AFTER_MS: {
    schema: int(0, 86_400_000).default(0),
    at: 'runParkAfterMs',
    doc: "a run that has waited this long for a frontend tool result (counted from the call's `TOOL_CALL_END`) is parked: it holds nothing on any replica until a result is posted (to any replica), so `FRONTEND_TOOL_TIMEOUT_MS` may be hours (`0`: never parked)",
  },
  CLIENT_PROTOCOL: {
    schema: z.enum(['io-intelligence', 'ag-ui']).default('io-intelligence'),
    at: 'clientProtocol',
    doc: 'how frontend tools are answered unless a run says (`forwardedProps.clientProtocol`): `io-intelligence` (the result is posted into the waiting run) or `ag-ui` (the run ends with the pending calls; the result comes as a `tool` message in the next run)',
  },
  APPROVAL_TTL_MS: {
    schema: int(1_000, 30 * 86_400_000).default(86_400_000),
    at: 'approvalTtlMs',
    doc: 'how long a tool call waiting for approval (an AG-UI interrupt) can be answered; later its `resume` is 410 `INTERRUPT_EXPIRED`',
  },
  RUN_LEASE_MS: {
    schema: int(300, 600_000).default(20_000),
    at: 'runLeaseMs',
    doc: "a run's lease; a replica that dies hands its runs to another this long after its last renewal (which continues them)",
  },
  RUN_MAX_ATTEMPTS: {
    schema: int(1, 100).default(3),
    at: 'runMaxAttempts',
    doc: 'how many times a run may lose its replica (`kill -9`, a crash) and be continued by another; after that it ends `RUN_ERROR INTERRUPTED` (`1`: never continued)',
  },
  RUN_QUEUE_WAIT_MS: {
    schema: int(1_000, 3_600_000).default(60_000),
    at: 'runQueueWaitMs',
    doc: 'how long a `POST /run` with `forwardedProps.ifBusy` `enqueue` or `interrupt` waits for its busy thread before it is refused (409 `THREAD_BUSY`); keep it under the read timeout of proxies in front',
  },
  RUN_EVENTS_RETENTION_MS: {
    schema: int(1_000, 7 * 86_400_000).default(900_000),
    at: 'runEvents.retentionMs',
    doc: "how long a run's events stay readable (`GET /runs/:runId/events`) after it ended; later it is 410 `RUN_EVENTS_EXPIRED`",
  },
  STREAM_MAX_QUEUED_BYTES: {
    schema: int(65_536, 1024 * 1024 * 1024).default(1024 * 1024),
    at: 'runEvents.maxQueuedBytes',
    doc: 'events a slow stream may have queued before it stops taking live events and catches up from storage',
  },
  RUN_DISCONNECT_GRACE_MS: {
    schema: int(0, 86_400_000).default(0),
    at: 'disconnectGrace.defaultMs',
    doc: 'how long a run goes on once its last reader left, for a rejoin (`0`: cancelled at once); `forwardedProps.disconnectGraceMs` sets it per run',
  },
  RUN_DISCONNECT_GRACE_MAX_MS: {
    schema: int(0, 86_400_000).default(600_000),
    at: ['disconnectGrace.maxMs', 'ceilings.maxDisconnectGraceMs'],
    doc: 'the ceiling of `forwardedProps.disconnectGraceMs`',
  },
  STREAM_WRITE_TIMEOUT_MS: {
    schema: int(100, 3_600_000).default(30_000),
    at: 'runEvents.writeTimeoutMs',
    doc: 'a reader whose connection takes nothing for this long is closed (`io_bridge_stream_closed_total{reason="write_timeout"}`); its run follows the disconnect rules',
  },
  MAX_ACTIVE_RUNS_PER_OWNER: {
    schema: int(1, 1_000_000).default(20),
    at: 'fairShare.activeRunsPerOwner',
    doc: "an owner's live runs, counting those kept for a rejoin and those waiting for a tool (429 `TOO_MANY_ACTIVE_RUNS`); with `AUTH_MODE=none` also per client address",
  },
  MAX_READERS_PER_OWNER: {
    schema: int(1, 1_000_000).default(20),
    at: 'fairShare.readersPerOwner',
    doc: "an owner's open `GET /runs/:runId/events` and `GET /threads/:threadId/events` streams, per instance (429 `TOO_MANY_READERS`); with `AUTH_MODE=none` also per client address",
  },
  MAX_READERS_PER_RUN: {
    schema: int(1, 1_000_000).default(10),
    at: 'fairShare.readersPerRun',
    doc: 'open `GET /runs/:runId/events` streams of one run, or `GET /threads/:threadId/events` streams of one thread, per instance (429 `TOO_MANY_READERS`)',
  },
} as const satisfies Record<string, Variable>;

/** The history the model sees, and the ceilings of what a run may ask of the model. */
export const MEMORY_VARIABLES = {
  LAST_MESSAGES: {
    schema: int(0, 10_000).default(40),
    at: 'lastMessages',
    doc: 'stored messages the model sees by default',
  },
  MODEL_MAX_MESSAGES: {
    schema: int(1, 100_000).default(100),
    at: 'modelMaxMessages',
    doc: "messages handed to the model in one call at most, stored and incoming together: the oldest beyond it are left out, as when the context window is full (the engine's work on a history grows faster than its length; see [limits.md](limits.md#request-bodies))",
  },
  STORE_ALL_RUNS: {
    schema: bool.default(false),
    at: 'storeAllRuns',
    doc: 'store every run in its thread as if it named memory (see [Which runs are stored](protocol.md#which-runs-are-stored))',
  },
  MAX_LAST_MESSAGES: {
    schema: int(1, 10_000).default(1000),
    at: 'ceilings.maxLastMessages',
    doc: 'the most stored messages a client may ask the model to see (`memoryOptions.lastMessages`); the model is still handed at most `MODEL_MAX_MESSAGES`',
  },
  MODEL_MAX_TOKENS: {
    schema: int(1, 10_000_000).default(16_384),
    at: 'ceilings.maxTokens',
    doc: 'the ceiling of `forwardedProps.modelSettings.maxTokens`',
  },
  MODEL_MAX_RETRIES: {
    schema: int(0, 20).default(5),
    at: 'ceilings.maxRetries',
    doc: 'the ceiling of `forwardedProps.modelSettings.maxRetries`',
  },
} as const satisfies Record<string, Variable>;
