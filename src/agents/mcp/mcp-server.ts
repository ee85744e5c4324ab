import { Logger } from '@nestjs/common';
import { MCPClient } from '@mastra/mcp';
import { noopLogger } from '@mastra/core/logger';
import { RequestContext } from '@mastra/core/request-context';
import { createTool, type Tool } from '@mastra/core/tools';
import { modelToolName } from '../../protocol/tool-names';
import type { Metrics } from '../../ops/metrics.service';
import { McpServerEntry, toolMatcher } from '../agents-config';
import { connectLegacySse, MCP_TOOL_FAILED } from './legacy-sse';
import { identityIn, MCP_SERVER_OF, RUN_CALLER_KEY } from '../tools/run-tools';

type AnyTool = Tool<any, any, any, any, any, any, any>;

/** An MCP server as `GET /agents` shows it (docs/agents.md#mcp-servers). */
export type McpServerView = {
  name: string;
  /** `sse`: an HTTP server that answers only over MCP's older SSE transport. */
  transport: 'stdio' | 'http' | 'sse';
  status: 'connecting' | 'connected' | 'unavailable';
  /** Why it is unavailable (its last connection error, first line). */
  error?: string;
};

export type McpServerOptions = {
  /** A call's limit, and the client's for each request (TOOL_TIMEOUT_MS; 0: none). */
  toolTimeoutMs: number;
  log: Logger;
  metrics?: Metrics;
  /** The first wait before a reconnection, doubled up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
};

const UNAVAILABLE = (name: string) => `MCP server '${name}' is unavailable`;

/** An open connection to the server: its tools by their own names, and how to close it. */
type Connection = {
  transport: McpServerView['transport'];
  tools: Map<string, AnyTool>;
  close: () => Promise<void>;
};

/**
 * One MCP server of the agents file, through `@mastra/mcp`: connected at start-up or on reload, its
 * tools discovered then (never per run), offered under their exposed names (the prefix and the
 * tool's name, aliased when a provider can't take it), filtered by the allow-list and marked for
 * approval as configured. A server that is down is `unavailable` with no tools, and reconnects
 * with backoff; a call that fails for the connection's sake reconnects it too. With `forwardAuth`,
 * every request of a call carries the identity of the run that makes it (its request context's
 * {@link RunCaller}), never another's: the client's `fetch` reads it per request.
 */
export class McpServer {
  private connection?: Connection;
  /** How it is connected now (an HTTP server may answer over the older SSE transport). */
  private transport: McpServerView['transport'];
  /** The server's tools by their own names, as the client made them (their `execute` calls the server). */
  private discovered = new Map<string, AnyTool>();
  /** The tools the agents offer, by exposed name; rebuilt on each discovery. */
  private offered: AnyTool[] = [];
  private state: McpServerView['status'] = 'connecting';
  private lastError?: string;
  private attempt = 0;
  private timer?: NodeJS.Timeout;
  private connecting?: Promise<void>;
  private closed = false;
  /** Retired by a reload: closes once no call is in flight, and connects again only for a call. */
  private retired = false;
  private inFlight = 0;
  /** Bumped on every change of the tools offered: an agent's tool snapshot is rebuilt then. */
  version = 0;

  constructor(
    readonly name: string,
    readonly entry: McpServerEntry,
    private readonly options: McpServerOptions,
  ) {
    this.transport = entry.transport;
  }

  /** Connects, waiting at most `waitMs`; a server not there by then goes on connecting in the background. */
  async start(waitMs: number): Promise<void> {
    const connected = this.connect();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([connected, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  view(): McpServerView {
    return {
      name: this.name,
      transport: this.transport,
      status: this.state,
      ...(this.state === 'unavailable' && this.lastError ? { error: this.lastError } : {}),
    };
  }

  /** The tools the server offers now: none while it is not connected. */
  tools(): readonly AnyTool[] {
    return this.state === 'connected' ? this.offered : [];
  }

  /** A reload replaced it: it closes now, or when the last call of a run started before ends. */
  retire(): void {
    this.retired = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight === 0) void this.disconnect();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.disconnect();
  }

  private connect(): Promise<void> {
    this.connecting ??= this.tryConnect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async tryConnect(): Promise<void> {
    const { name } = this;
    try {
      const connection = await this.open();
      if (this.closed) return void (await connection.close().catch(() => undefined));
      this.connection = connection;
      this.transport = connection.transport;
      this.discovered = connection.tools;
      this.offered = this.offer();
      this.attempt = 0;
      this.setState('connected');
      this.options.log.log(
        `MCP server '${name}': connected (${connection.transport}), ${this.offered.length} tool(s)`,
      );
    } catch (err) {
      this.lastError = firstLine(err);
      this.setState('unavailable');
      this.options.log.warn(`MCP server '${name}': unavailable: ${this.lastError}`);
      this.scheduleReconnect();
    }
  }

  /**
   * A connection through `@mastra/mcp` (stdio, or Streamable HTTP); a URL that does not speak
   * Streamable HTTP is tried again over the older SSE transport, and the first failure is the one
   * reported when both fail.
   */
  private async open(): Promise<Connection> {
    const { name, entry } = this;
    const client = new MCPClient({
      id: `io-bridge:${name}:${process.hrtime.bigint()}`,
      servers: { [name]: this.definition() },
      ...(this.options.toolTimeoutMs ? { timeout: this.options.toolTimeoutMs } : {}),
    });
    client.__setLogger(noopLogger);
    const { tools, errors } = await client.listToolsWithErrors().catch((err: unknown) => ({
      tools: {},
      errors: { [name]: firstLine(err) },
    }));
    const close = () => client.disconnect();
    if (errors[name] === undefined) {
      const own = `${name}_`;
      const byName = Object.entries(tools).map(
        ([key, tool]) => [key.startsWith(own) ? key.slice(own.length) : key, tool] as const,
      );
      return { transport: entry.transport, tools: new Map(byName), close };
    }
    await close().catch(() => undefined);
    if (entry.transport === 'stdio') throw new Error(errors[name]);
    try {
      const legacy = await connectLegacySse(
        new URL(entry.url),
        entry.headers,
        entry.forwardAuth,
        this.options.toolTimeoutMs,
      );
      return { transport: 'sse', ...legacy };
    } catch {
      throw new Error(errors[name]);
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retired || this.timer) return;
    const base = this.options.backoffMs ?? 1000;
    const wait = Math.min(this.options.maxBackoffMs ?? 60_000, base * 2 ** this.attempt++);
    // Jitter, so that replicas that lost a server together don't come back at once.
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.connect();
      },
      wait * (0.5 + Math.random() / 2),
    );
    this.timer.unref();
  }

  private setState(state: McpServerView['status']): void {
    if (state !== this.state) this.version++;
    this.state = state;
    // A retired server's replacement, of the same name, is the one the gauge tells of.
    if (!this.retired)
      this.options.metrics?.mcpServerUp.set({ server: this.name }, state === 'connected' ? 1 : 0);
  }

  private async disconnect(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    if (this.state === 'connected') this.setState('connecting');
    await connection?.close().catch(() => undefined);
  }

  /** The client's definition of the server (`@mastra/mcp`). */
  private definition() {
    const { entry } = this;
    if (entry.transport === 'stdio') {
      return {
        command: entry.command,
        args: entry.args,
        env: entry.env,
        // Nothing of the service's environment beyond what the file lists.
        inheritDefaultEnv: false,
        ...(entry.cwd ? { cwd: entry.cwd } : {}),
        stderr: 'ignore' as const,
      };
    }
    const forward = entry.forwardAuth;
    return {
      url: new URL(entry.url),
      requestInit: { headers: entry.headers },
      ...(forward
        ? {
            fetch: (url: string | URL, init?: RequestInit, context?: RequestContext | null) => {
              const headers = new Headers(init?.headers);
              // A tool call only: a reconnection the call set off (its handshake, a session's
              // stream) is the server's, not this caller's.
              const identity = isToolCall(init?.body) ? identityIn(context, forward) : undefined;
              if (identity) headers.set(identity.header, identity.value);
              return fetch(url, { ...init, headers });
            },
          }
        : {}),
    };
  }

  /** The discovered tools the agents may use, under their exposed names. */
  private offer(): AnyTool[] {
    const { entry, name } = this;
    const allowed = entry.tools ? toolMatcher(entry.tools) : () => true;
    const approval =
      entry.requireApproval === true
        ? () => true
        : Array.isArray(entry.requireApproval)
          ? toolMatcher(entry.requireApproval)
          : () => false;
    const prefix = entry.prefix ?? `${name}_`;
    return [...this.discovered]
      .filter(([tool]) => allowed(tool))
      .map(([tool, made]) => {
        const offered = createTool({
          id: modelToolName(`${prefix}${tool}`),
          description: made.description ?? '',
          inputSchema: made.inputSchema as any,
          ...(approval(tool) ? { requireApproval: true } : {}),
          execute: (input: unknown, ctx: any) => this.call(tool, input, ctx),
        }) as AnyTool;
        return Object.assign(offered, { [MCP_SERVER_OF]: name });
      });
  }

  /**
   * One call of `tool`, for the run whose request context `ctx` carries. A server that is not
   * connected (down, or retired since) is asked to connect first; a call that fails for the
   * connection's sake (not a tool error the server reported) reconnects it in the background.
   */
  private async call(
    tool: string,
    input: unknown,
    ctx: { requestContext?: RequestContext; abortSignal?: AbortSignal } | undefined,
  ): Promise<unknown> {
    const done = this.options.metrics?.mcpToolDuration.startTimer({ server: this.name, tool });
    this.inFlight++;
    let outcome = 'error';
    try {
      if (!this.connection && this.retired) await this.connect();
      const made = this.connection ? this.discovered.get(tool) : undefined;
      if (!made?.execute) throw new Error(UNAVAILABLE(this.name));
      // Only the caller: the run's other entries (forwardedProps, claims, its tool context) are not
      // the MCP client's to see.
      const caller = ctx?.requestContext?.get(RUN_CALLER_KEY);
      const context = new RequestContext(caller ? [[RUN_CALLER_KEY, caller]] : []);
      const result = await made.execute(input, {
        requestContext: context,
        ...(ctx?.abortSignal ? { abortSignal: ctx.abortSignal } : {}),
      });
      outcome = 'ok';
      return result;
    } catch (err) {
      // A call stopped on purpose (its run ended, TOOL_TIMEOUT_MS) says nothing of the connection.
      if (!reportedByServer(err) && !ctx?.abortSignal?.aborted) this.lost(err);
      throw err;
    } finally {
      this.inFlight--;
      done?.();
      this.options.metrics?.mcpToolCalls.inc({ server: this.name, tool, outcome });
      if (this.retired && this.inFlight === 0) void this.disconnect();
    }
  }

  /** The connection failed a call: it is dropped and made again (unless retired or closed). */
  private lost(err: unknown): void {
    if (this.closed || this.retired || this.state !== 'connected') return;
    this.lastError = firstLine(err);
    this.options.log.warn(`MCP server '${this.name}': a call failed (${this.lastError}); reconnecting`);
    void this.disconnect().then(() => {
      this.setState('unavailable');
      void this.connect();
    });
  }
}

/** Whether a request's body is a JSON-RPC `tools/call`. */
function isToolCall(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  try {
    const message = JSON.parse(body) as { method?: unknown } | Array<{ method?: unknown }>;
    return [message].flat().some((m) => m?.method === 'tools/call');
  } catch {
    return false;
  }
}

/** A tool error the server reported in its result (`isError`): the connection is fine. */
function reportedByServer(err: unknown): boolean {
  return (err as { id?: unknown })?.id === MCP_TOOL_FAILED;
}

/**
 * An error's first line, as `GET /agents` and the log show it: a URL's query and credentials are
 * left out (an API key may ride there).
 */
export function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err)
    .split('\n')[0]
    .replace(/(https?:\/\/)[^/\s@]*@/g, '$1')
    .replace(/(https?:\/\/[^\s?#]*)[?#]\S*/g, '$1?…')
    .slice(0, 300);
}
