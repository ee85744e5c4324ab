import { AsyncLocalStorage } from 'node:async_hooks';
import { Client, SSEClientTransport } from '@modelcontextprotocol/client';
import type { RequestContext } from '@mastra/core/request-context';
import { createTool, type Tool } from '@mastra/core/tools';
import { linearTimeSchema } from '../../common/json-schema';
import { ForwardAuth, identityIn } from '../tools/run-tools';

type AnyTool = Tool<any, any, any, any, any, any, any>;

/** An open connection to a server over the SSE transport of MCP's 2024-11-05 revision. */
export type LegacySseConnection = { tools: Map<string, AnyTool>; close: () => Promise<void> };

/** The id `@mastra/mcp` gives a tool error the server reported (`isError`); this transport's tools use it too. */
export const MCP_TOOL_FAILED = 'MCP_CLIENT_TOOL_EXECUTION_FAILED';

/** The identity header of the call in progress, for the POST its request makes. */
const callIdentity = new AsyncLocalStorage<{ header: string; value: string } | undefined>();

/**
 * The fallback for a server that does not speak Streamable HTTP (`@mastra/mcp` 2 speaks only that):
 * MCP's SDK client over the SSE transport (a GET event stream, a POST per message). Its tools are
 * made as `@mastra/mcp` makes them: a tool error the server reports (`isError`) is thrown with the
 * server's text, structured content is the result. With `forwardAuth`, a call's POST carries the
 * identity of the run that makes it, read from the call's request context.
 */
export async function connectLegacySse(
  url: URL,
  headers: Record<string, string>,
  forward: ForwardAuth | undefined,
  timeoutMs: number,
): Promise<LegacySseConnection> {
  const transport = new SSEClientTransport(url, {
    requestInit: { headers },
    fetch: (input, init) => {
      const identity = callIdentity.getStore();
      if (!identity) return fetch(input, init);
      const sent = new Headers(init?.headers);
      sent.set(identity.header, identity.value);
      return fetch(input, { ...init, headers: sent });
    },
  });
  const client = new Client({ name: 'io-bridge', version: '1' });
  const timeout = timeoutMs || undefined;
  await client.connect(transport, { ...(timeout ? { timeout } : {}) });
  try {
    const tools = new Map<string, AnyTool>();
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined);
      for (const tool of page.tools) {
        tools.set(
          tool.name,
          createTool({
            id: tool.name,
            description: tool.description ?? '',
            inputSchema: linearTimeSchema(tool.inputSchema as Record<string, unknown>),
            execute: async (input: unknown, ctx: any) => {
              const { requestContext, abortSignal } = (ctx ?? {}) as {
                requestContext?: RequestContext;
                abortSignal?: AbortSignal;
              };
              const identity = forward ? identityIn(requestContext, forward) : undefined;
              const result = await callIdentity.run(identity, () =>
                client.callTool(
                  { name: tool.name, arguments: (input ?? {}) as Record<string, unknown> },
                  { ...(abortSignal ? { signal: abortSignal } : {}), ...(timeout ? { timeout } : {}) },
                ),
              );
              if (result.isError) throw toolError(result.content);
              return result.structuredContent ?? result;
            },
          }) as AnyTool,
        );
      }
      cursor = page.nextCursor;
    } while (cursor);
    return { tools, close: () => client.close() };
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}

/** A tool's reported failure, as `@mastra/mcp` throws it (the server's text, its error id). */
function toolError(content: unknown): Error {
  const text = Array.isArray(content)
    ? content
        .filter((c): c is { type: 'text'; text: string } => (c as { type?: unknown })?.type === 'text')
        .map((c) => c.text)
        .join('\n')
    : '';
  return Object.assign(new Error(text || 'MCP tool execution failed'), {
    id: MCP_TOOL_FAILED,
  });
}
