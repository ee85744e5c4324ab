import { createTool, Tool } from '@mastra/core/tools';
import { safeErrorMessage } from '../../common/errors';
import { linearTimeSchema } from '../../common/json-schema';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, startSpan, tracingOn, withSpan } from '../../ops/tracing';

/** What a frontend posted for a tool call: its content, or an error text. */
export type ToolResult = { content?: unknown; error?: string };

/** The key under which a run's tool context travels in Mastra's request context. */
export const RUN_CONTEXT_KEY = 'io-bridge.run';

/** The name of a tool's MCP server, on the tools MCP servers offer (spans name it). */
export const MCP_SERVER_OF = Symbol('mcp server');

/** The key under which a run's caller travels in Mastra's request context, for `forwardAuth`. */
export const RUN_CALLER_KEY = 'io-bridge.caller';

/** How an MCP server is told who calls (docs/agents.md#mcp-servers): the bearer token, or a header of the principal. */
export type ForwardAuth = 'bearer' | { header: string; value: string };

/**
 * Who a run is for, as its tools may tell a system they call (`forwardAuth`). The bearer token is
 * a private field: it is in no enumerable property, so no log, span or serialized context has it.
 */
export class RunCaller {
  readonly #token?: string;

  constructor(
    readonly resourceId: string,
    readonly claims: Readonly<Record<string, unknown>>,
    token?: string,
  ) {
    this.#token = token;
  }

  /**
   * The header that tells a server who calls: `Authorization: Bearer <the caller's token>`, or the
   * configured header with `{resourceId}` and `{claims.<name>}` filled in; none when the run has no
   * token (AUTH_MODE is not jwt, or a run continued on another replica) or lacks a claim it names.
   */
  identityFor(forward: ForwardAuth): { header: string; value: string } | undefined {
    if (forward === 'bearer') {
      return this.#token ? { header: 'authorization', value: `Bearer ${this.#token}` } : undefined;
    }
    let missing = false;
    const value = forward.value.replace(
      /\{(resourceId|claims\.([^}]+))\}/g,
      (_all, field: string, claim?: string) => {
        const filled = claim === undefined ? this.resourceId : this.claims[claim];
        if (typeof filled === 'string' || typeof filled === 'number') return String(filled);
        missing = true;
        return '';
      },
    );
    return missing || /[\r\n]/.test(value) ? undefined : { header: forward.header, value };
  }

  toJSON(): { resourceId: string } {
    return { resourceId: this.resourceId };
  }
}

/**
 * The identity header `forward` asks for, of the run whose request context `context` is; none when
 * it carries no caller (a request of the connection's own) or the caller has no such identity.
 */
export function identityIn(
  context: { get(key: string): unknown } | null | undefined,
  forward: ForwardAuth,
): { header: string; value: string } | undefined {
  const caller = context?.get(RUN_CALLER_KEY);
  return caller instanceof RunCaller ? caller.identityFor(forward) : undefined;
}

/** A server tool call's bounds (0: none): TOOL_TIMEOUT_MS, MAX_TOOL_RESULT_BYTES. */
export type ToolLimits = { timeoutMs: number; maxResultBytes: number };

/**
 * `execute` within `limits`: past the timeout its signal aborts and the call fails with an error the
 * model reads; a result larger than the limit once serialized is cut, and the cut is said in it.
 */
export async function boundedCall(
  name: string,
  limits: ToolLimits,
  outer: AbortSignal | undefined,
  execute: (signal: AbortSignal | undefined) => Promise<unknown>,
): Promise<unknown> {
  if (!limits.timeoutMs) return cutResult(await execute(outer), limits.maxResultBytes);
  const timeout = new AbortController();
  const signal = outer ? AbortSignal.any([outer, timeout.signal]) : timeout.signal;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`Tool ${name} did not answer within ${limits.timeoutMs} ms (TOOL_TIMEOUT_MS)`);
      timeout.abort(error);
      reject(error);
    }, limits.timeoutMs);
  });
  try {
    return cutResult(await Promise.race([execute(signal), expired]), limits.maxResultBytes);
  } finally {
    clearTimeout(timer);
  }
}

/** `result` as it is, or, when its JSON passes `maxBytes`, its first `maxBytes` as text and what was cut. */
export function cutResult(result: unknown, maxBytes: number): unknown {
  if (!maxBytes) return result;
  const text = typeof result === 'string' ? result : JSON.stringify(result);
  if (text === undefined || text.length <= maxBytes / 3) return result;
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return result;
  const kept = bytes
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${kept}\n[cut: the result was ${bytes.length} bytes; its first ${maxBytes} are above (MAX_TOOL_RESULT_BYTES)]`;
}

/** What a tool's `execute` can do with its run: report its result the moment it exists, wait for a frontend. */
export interface RunToolContext {
  /** Aborted when the run stops (client gone, cancel, timeout, shutdown). */
  readonly signal: AbortSignal;
  reportResult(toolCallId: string, content: unknown): void;
  waitForFrontendResult(toolCallId: string): Promise<ToolResult>;
}

type ExecuteContext = {
  requestContext?: { get(key: string): unknown };
  agent?: { toolCallId?: string };
};

function runOf(ctx: unknown): { run?: RunToolContext; toolCallId?: string } {
  const c = ctx as ExecuteContext | undefined;
  return {
    run: c?.requestContext?.get(RUN_CONTEXT_KEY) as RunToolContext | undefined,
    toolCallId: c?.agent?.toolCallId,
  };
}

/** A span for one tool call: a server tool's execution, or a frontend tool's wait for its result. */
function toolSpan(
  name: string,
  kind: 'server' | 'frontend',
  toolCallId: string | undefined,
  mcpServer?: string,
): Span | undefined {
  return startSpan(`execute_tool ${name}`, SpanKind.INTERNAL, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': toolCallId,
    'io_bridge.tool.kind': kind,
    ...(mcpServer ? { 'io_bridge.mcp.server': mcpServer } : {}),
  });
}

/** `work` under the tool call's span when tracing is on; a failure marks the span as an error. */
async function traced<T>(
  name: string,
  kind: 'server' | 'frontend',
  toolCallId: string | undefined,
  work: () => Promise<T>,
  mcpServer?: string,
): Promise<T> {
  const span = tracingOn() ? toolSpan(name, kind, toolCallId, mcpServer) : undefined;
  if (!span) return work();
  try {
    const result = await withSpan(span, work);
    span.end();
    return result;
  } catch (err) {
    // The code only: a tool's error text may carry the user's data.
    endWithError(span, 'TOOL_ERROR');
    throw err;
  }
}

/**
 * Wraps a server tool so its TOOL_CALL_RESULT is emitted as soon as it returns: Mastra itself emits
 * the results of a step only when every tool of the step is done, and a server tool's result must
 * not wait for a frontend's.
 */
export function reportingTool(
  tool: Tool<any, any, any, any, any, any, any>,
  limits: ToolLimits,
  /** The name the model calls it by (an agent's key for it), if not its id. */
  id = tool.id,
): Tool<any, any, any, any, any, any, any> {
  const execute = tool.execute!;
  const mcpServer = (tool as { [MCP_SERVER_OF]?: string })[MCP_SERVER_OF];
  return createTool({
    id,
    description: tool.description,
    inputSchema: tool.inputSchema as any,
    outputSchema: tool.outputSchema as any,
    execute: async (input: unknown, ctx: any) => {
      const { run, toolCallId } = runOf(ctx);
      try {
        const output = await traced(
          id,
          'server',
          toolCallId,
          () =>
            boundedCall(id, limits, ctx?.abortSignal, (abortSignal) =>
              execute(input, { ...ctx, abortSignal }),
            ),
          mcpServer,
        );
        if (run && toolCallId) run.reportResult(toolCallId, output);
        return output;
      } catch (err) {
        if (run && toolCallId) run.reportResult(toolCallId, { error: safeErrorMessage(err, 'Tool failed') });
        throw err;
      }
    },
  }) as Tool<any, any, any, any, any, any, any>;
}

export type FrontendToolDeclaration = {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
};

const EMPTY_OBJECT_SCHEMA = { type: 'object', properties: {} };

/**
 * A frontend tool: Mastra validates the model's arguments against the declared schema (with RE2
 * patterns, see json-schema.ts), then it waits for the posted result.
 */
export function frontendTool(declaration: FrontendToolDeclaration): Tool<any, any, any, any, any, any, any> {
  return createTool({
    id: declaration.name,
    description: declaration.description ?? '',
    inputSchema: linearTimeSchema(declaration.parameters ?? EMPTY_OBJECT_SCHEMA),
    execute: async (_input: unknown, ctx: any) => {
      const { run, toolCallId } = runOf(ctx);
      if (!run || !toolCallId) throw new Error('A frontend tool needs its run');
      return traced(declaration.name, 'frontend', toolCallId, async () => {
        const result = await run.waitForFrontendResult(toolCallId);
        if (result.error !== undefined) {
          run.reportResult(toolCallId, { error: result.error });
          throw new Error(result.error);
        }
        run.reportResult(toolCallId, result.content);
        return result.content;
      });
    },
  }) as Tool<any, any, any, any, any, any, any>;
}
