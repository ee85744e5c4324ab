import { createTool, type Tool } from '@mastra/core/tools';
import type { McpServer } from './mcp/mcp-server';
import { boundedCall, reportingTool, ToolLimits } from './tools/run-tools';

type AnyTool = Tool<any, any, any, any, any, any, any>;

/** An agent's server tools as they are now: its own, and those of its MCP servers that are connected. */
export type ToolSnapshot = {
  /** Every tool, as `GET /agents` lists them. */
  listed: readonly AnyTool[];
  /** What the engine runs, by name: every tool but those a person approves first, reporting their results. */
  runnable: Record<string, AnyTool>;
  names: ReadonlySet<string>;
  /** Tools that need a person's approval before they run (Mastra's `requireApproval`), by name. */
  approval: ReadonlyMap<string, AnyTool>;
};

/** Whether a tool is marked with Mastra's `requireApproval` (a flag; an approval function counts as always). */
export function requiresApproval(tool: AnyTool): boolean {
  return Boolean((tool as { requireApproval?: unknown }).requireApproval);
}

/**
 * An agent's server tools: its own, fixed, and its MCP servers', which come and go as the servers
 * connect and drop. A snapshot is rebuilt only when a server's tools changed, so a run reads it for
 * the price of comparing a few numbers.
 */
export class AgentTools {
  private snapshot?: ToolSnapshot;
  private versions = '';
  private readonly wrapped = new WeakMap<AnyTool, AnyTool>();

  constructor(
    private readonly own: readonly AnyTool[],
    private readonly servers: readonly McpServer[],
    private readonly limits: ToolLimits,
  ) {}

  current(): ToolSnapshot {
    const versions = this.servers.map((server) => server.version).join(',');
    if (this.snapshot && versions === this.versions) return this.snapshot;
    const listed = [...this.own, ...this.servers.flatMap((server) => server.tools())];
    this.versions = versions;
    this.snapshot = {
      listed,
      runnable: Object.fromEntries(
        listed.filter((tool) => !requiresApproval(tool)).map((tool) => [tool.id, this.reporting(tool)]),
      ),
      names: new Set(listed.map((tool) => tool.id)),
      approval: new Map(
        listed.filter(requiresApproval).map((tool) => [tool.id, this.bounded(tool)] as const),
      ),
    };
    return this.snapshot;
  }

  /** A tool a person approves, run within the limits once approved. */
  private bounded(tool: AnyTool): AnyTool {
    const { limits } = this;
    return createTool({
      id: tool.id,
      description: tool.description ?? '',
      inputSchema: tool.inputSchema as any,
      requireApproval: true,
      execute: (input: unknown, ctx: any) =>
        boundedCall(tool.id, limits, ctx?.abortSignal, (abortSignal) =>
          tool.execute!(input, { ...ctx, abortSignal }),
        ),
    }) as AnyTool;
  }

  private reporting(tool: AnyTool): AnyTool {
    let made = this.wrapped.get(tool);
    if (!made) this.wrapped.set(tool, (made = reportingTool(tool, this.limits)));
    return made;
  }
}
