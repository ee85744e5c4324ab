import { createTool, Tool } from '@mastra/core/tools';
import { safeErrorMessage } from '../../common/errors';
import { linearTimeSchema } from '../../common/json-schema';

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

/**
 * Wraps a server tool so its TOOL_CALL_RESULT is emitted as soon as it returns: Mastra itself emits
 * the results of a step only when every tool of the step is done, and a server tool's result must
 * not wait for a frontend's.
 */
export function reportingTool(
  tool: Tool<any, any, any, any, any, any, any>,
): Tool<any, any, any, any, any, any, any> {
  const execute = tool.execute!;
  return createTool({
    id: tool.id,
    description: tool.description,
    inputSchema: tool.inputSchema as any,
    outputSchema: tool.outputSchema as any,
    execute: async (input: unknown, ctx: any) => {
      const { run, toolCallId } = runOf(ctx);
      try {
        const output = await execute(input, ctx);
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
      const result = await run.waitForFrontendResult(toolCallId);
      if (result.error !== undefined) {
        run.reportResult(toolCallId, { error: result.error });
        throw new Error(result.error);
      }
      run.reportResult(toolCallId, result.content);
      return result.content;
    },
  }) as Tool<any, any, any, any, any, any, any>;
}
