import { Logger } from '@nestjs/common';
import { MASTRA_RESOURCE_ID_KEY, MASTRA_THREAD_ID_KEY } from '@mastra/core/request-context';
import { Span } from '@opentelemetry/api';
import { RUN_CALLER_KEY, RUN_CONTEXT_KEY, RunCaller, RunToolContext } from '../../agents/tools/run-tools';
import { bearerTokenOf } from '../../auth/principal';
import { linearTimeSchema } from '../../common/json-schema';
import { aguiToModelMessages } from '../../threads/agui-to-model';
import { dbMessageOf, placeMessages } from '../../threads/mastra-rows';
import { StoredMessage } from '../../threads/message-format';
import { estimateTokens, fitToContext } from './context-window';
import { PreparedRun } from './run-preparer';

/** One call of `agent.stream()`, as the runner makes it. */
export type AgentCall = {
  /** `agent.stream()` options, except `abortSignal` and `requestContext` (see `signal` and `context`). */
  options?: Record<string, unknown>;
  /** The request context's entries: the agent's tools and model read them. */
  context?: Record<string, unknown>;
  /** Stops the call, as unsubscribing does. */
  signal?: AbortSignal;
};

/** What a tool's declaration is reckoned to take of the prompt, in tokens. */
const TOOL_TOKENS = 100;

/**
 * A run's agent call: its history fitted into the agent's context window, as model messages; the
 * call's options; its request context, with `tools` (the run itself) for its tools.
 */
export function agentCallOf(
  run: PreparedRun,
  history: StoredMessage[],
  tools: RunToolContext,
  signal: AbortSignal,
  log: Logger,
  span: Span | undefined,
): { messages: unknown; call: AgentCall } {
  const aliases = run.aliases;
  const fitted = fittedHistory(run, history, log, span);
  return {
    // An agent with a Mastra memory gets its new messages as the rows the thread stores them in (by
    // id: Mastra takes each once, whether it recalls it too or not); any other, model messages.
    messages: remembers(run)
      ? placeMessages(run.threadId, fitted).rows.map((row) =>
          dbMessageOf(row, { threadId: run.threadId, resourceId: run.principal.resourceId }, new Date()),
        )
      : aguiToModelMessages(fitted, aliases.empty ? undefined : (name) => aliases.model(name)),
    call: {
      options: {
        maxSteps: run.maxSteps,
        context: run.context,
        toolsets: { frontend: run.frontendTools },
        ...(Object.keys(run.clientTools).length ? { clientTools: run.clientTools } : {}),
        // The provider calls retry themselves (ProviderCall), honouring Retry-After: not the engine too.
        modelSettings: { ...run.modelSettings, maxRetries: 0 },
        ...(run.structuredOutput
          ? { structuredOutput: { schema: linearTimeSchema(run.structuredOutput.schema) } }
          : {}),
        ...(remembers(run) ? { memory: memoryOf(run) } : {}),
      },
      // The request context the agent's instructions, model, tools and memory read
      // (docs/agents.md#the-caller-in-the-request-context): the client's extra forwardedProps (never
      // Mastra's reserved keys), all of forwardedProps, the caller's claims, and the owner under
      // MASTRA_RESOURCE_ID_KEY.
      context: {
        ...withoutReservedKeys(run.extras),
        forwardedProps: run.forwardedProps,
        // The caller's token claims (REQUEST_CONTEXT_CLAIMS), never what a client sent under that name.
        claims: run.principal.claims ?? {},
        [MASTRA_RESOURCE_ID_KEY]: run.principal.resourceId,
        ...(remembers(run) ? { [MASTRA_THREAD_ID_KEY]: run.threadId } : {}),
        [RUN_CONTEXT_KEY]: tools,
        [RUN_CALLER_KEY]: callerOf(run),
      },
      signal,
    },
  };
}

/** Who the run is for, as its tools may tell the systems they call (`forwardAuth`). */
export function callerOf(run: PreparedRun): RunCaller {
  const { principal } = run;
  return new RunCaller(principal.resourceId, principal.claims ?? {}, bearerTokenOf(principal));
}

/**
 * Whether the run reaches the agent's own Mastra memory: a stored run does; a stateless run (a
 * thread io-bridge does not store: its client sends the whole history) does not, since Mastra makes
 * a thread of every one it is given, read-only or not, and a stateless run makes no thread.
 */
const remembers = (run: PreparedRun) => run.agent.ownMemory && !run.stateless;

/** The agent a run calls: without its own memory for a stateless run (see `remembers`). */
export const agentOf = (run: PreparedRun) => (remembers(run) ? run.agent.agent : run.agent.withoutMemory);

/**
 * The run's thread in the agent's own Mastra memory: the thread and its owner, and what the request
 * asked of the memory (`memoryOptions.lastMessages` within MAX_LAST_MESSAGES, `readOnly`) over the
 * agent's own options. Its recall reaches past the rows the claim just stored (the run's own input).
 */
function memoryOf(run: PreparedRun) {
  const recalled = run.requestedLastMessages ?? run.agent.recalls;
  const options = {
    ...(typeof recalled === 'number' ? { lastMessages: recalled + (run.storedRows ?? 0) } : {}),
    ...(run.readOnly ? { readOnly: true } : {}),
  };
  return {
    thread: run.threadId,
    resource: run.principal.resourceId,
    ...(Object.keys(options).length ? { options } : {}),
  };
}

/**
 * `entries` less Mastra's reserved request-context keys (`mastra__…`: the owner, the thread, an
 * auth token): a client's forwardedProps must not name another owner's memory.
 */
function withoutReservedKeys(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(entries).filter(([key]) => !key.startsWith(MASTRA_RESERVED_PREFIX)),
  );
}

/** The prefix of Mastra's reserved request-context keys (MASTRA_RESOURCE_ID_KEY is `mastra__resourceId`). */
const MASTRA_RESERVED_PREFIX = 'mastra__';

/**
 * The history fitted into the agent's context window, less what the rest of the prompt takes (the
 * instructions, context entries, tools) and the answer's room, and into MODEL_MAX_MESSAGES; the log
 * and the span say what was left out.
 */
function fittedHistory(
  run: PreparedRun,
  history: StoredMessage[],
  log: Logger,
  span: Span | undefined,
): StoredMessage[] {
  const { contextTokens, instructions, serverToolNames } = run.agent;
  const tools =
    Object.keys(run.frontendTools).length + Object.keys(run.clientTools).length + serverToolNames.size;
  const answer = run.modelSettings.maxOutputTokens ?? Math.min(4096, Math.floor(contextTokens / 4));
  const budget =
    contextTokens - answer - estimateTokens(instructions) - estimateTokens(run.context) - TOOL_TOKENS * tools;
  const fitted = fitToContext(history, budget, run.modelMaxMessages);
  if (fitted.dropped) {
    log.log(
      `run ${run.runId}: history trimmed to fit the context window (at most ${run.modelMaxMessages} messages): ${fitted.dropped} of ${history.length} messages (about ${fitted.droppedTokens} tokens) left out`,
    );
    span?.setAttribute('io_bridge.history.trimmed_messages', fitted.dropped);
    span?.setAttribute('io_bridge.history.trimmed_tokens', fitted.droppedTokens);
  }
  return fitted.messages;
}
