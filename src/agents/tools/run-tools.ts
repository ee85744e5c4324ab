import { createTool, Tool } from '@mastra/core/tools';
import { safeErrorMessage } from '../../common/errors';
import { linearTimeSchema } from '../../common/json-schema';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, startSpan, tracingOn, withSpan } from '../../ops/tracing';

/** What a frontend posted for a tool call: its content, or an error text. */
export type ToolResult = { content?: unknown; error?: string };

/** The key under which a run's tool context travels in Mastra's request context. */
export const RUN_CONTEXT_KEY = 'io-bridge.run';

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
): Span | undefined {
  return startSpan(`execute_tool ${name}`, SpanKind.INTERNAL, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': toolCallId,
    'io_bridge.tool.kind': kind,
  });
}

/** `work` under the tool call's span when tracing is on; a failure marks the span as an error. */
async function traced<T>(
  name: string,
  kind: 'server' | 'frontend',
  toolCallId: string | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const span = tracingOn() ? toolSpan(name, kind, toolCallId) : undefined;
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
  /** The name the model calls it by (an agent's key for it), if not its id. */
  id = tool.id,
): Tool<any, any, any, any, any, any, any> {
  const execute = tool.execute!;
  return createTool({
    id,
    description: tool.description,
    inputSchema: tool.inputSchema as any,
    outputSchema: tool.outputSchema as any,
    execute: async (input: unknown, ctx: any) => {
      const { run, toolCallId } = runOf(ctx);
      try {
        const output = await traced(id, 'server', toolCallId, async () => execute(input, ctx));
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
