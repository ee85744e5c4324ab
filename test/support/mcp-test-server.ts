import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * A Streamable HTTP MCP server for tests, built on the official SDK 2.0 (`createMcpHandler`, served
 * on node:http through `toNodeHandler`). It is stateless: each HTTP request gets a fresh `McpServer`
 * and no session id is handed out, so a client's calls survive a restart of this server on the same
 * port. Clients that speak the 2026-07-28 revision (MCPClient of @mastra/mcp 2.x) are served on the
 * modern path; 2025-era clients get the SDK's stateless fallback.
 *
 * Tools:
 * - `whoami` (no arguments): the bearer token of the HTTP request that carried the call, or `none`;
 * - `add` ({ a: number, b: number }): the sum, as text;
 * - `hang` ({}): never answers, until the server stops (or the client cancels the call);
 * - `big` ({ bytes: number }): a text of that many `x`;
 * - `echo` ({ text: string }): the text;
 * - `reports.latest` ({}): a fixed text, under a name providers refuse (a dot);
 * - `fail` ({}): an error result (`isError`), as a tool reports its own failure.
 *
 * Run on its own (`node test/support/mcp-test-server.ts` with `PORT` set; Node 24 strips the
 * types), it serves until killed, so an e2e test can spawn it and SIGKILL it. `MCP_REQUIRE_TOKEN`
 * then makes every request without that bearer token answer 401.
 */

/** One HTTP request the server received, in arrival order. */
export type McpTestRequest = {
  /** The HTTP method: POST for JSON-RPC, GET or DELETE for 2025-era stream and session requests. */
  httpMethod: string;
  /** The `Authorization` header as sent, if any. */
  authorization?: string;
  /** The bearer token of that header, if it is one. */
  token?: string;
  /** The JSON-RPC methods the body carried (several for a batch), e.g. `['tools/call']`. */
  methods: string[];
  /** For a `tools/call`: the name of the tool called. */
  tool?: string;
  /** For a `tools/call`: its arguments. */
  arguments?: Record<string, unknown>;
  /** The HTTP status when the server answered before the MCP handler did (401 from `requireToken`). */
  rejected?: number;
};

export type McpTestServerOptions = {
  /** The port to listen on (127.0.0.1); a free one when left out. */
  port?: number;
  /** When given, a request whose bearer token (or `undefined` without one) fails it gets HTTP 401. */
  requireToken?: (token: string | undefined) => boolean;
};

export type McpTestServer = {
  /** `http://127.0.0.1:<port>/mcp`: the endpoint to give an MCP client. */
  url: string;
  port: number;
  /** Every HTTP request received so far, rejected ones included. */
  requests: McpTestRequest[];
  /** The `tools/call` requests of one tool, e.g. `toolCalls('whoami')`. */
  toolCalls: (tool: string) => McpTestRequest[];
  /** How many `hang` calls are waiting now. */
  hanging: () => number;
  /** Stops listening, drops every open connection (hung calls included) and resolves once closed. */
  close: () => Promise<void>;
};

/** The token of a `Bearer <token>` header; anything else has none. */
function bearer(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? '');
  return match ? match[1].trim() : undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

type JsonRpcMessage = { method?: unknown; params?: { name?: unknown; arguments?: unknown } };

/** What the request log keeps of a body: its methods, and for a tool call its name and arguments. */
function describe(body: unknown): Pick<McpTestRequest, 'methods' | 'tool' | 'arguments'> {
  const messages = (Array.isArray(body) ? body : [body]).filter(
    (m): m is JsonRpcMessage => typeof m === 'object' && m !== null,
  );
  const methods = messages.flatMap((m) => (typeof m.method === 'string' ? [m.method] : []));
  const call = messages.find((m) => m.method === 'tools/call');
  if (!call || typeof call.params?.name !== 'string') return { methods };
  return {
    methods,
    tool: call.params.name,
    arguments: (call.params.arguments ?? {}) as Record<string, unknown>,
  };
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

export async function startMcpTestServer(options: McpTestServerOptions = {}): Promise<McpTestServer> {
  const requests: McpTestRequest[] = [];
  // Each waiting `hang` call, by the function that lets it go.
  const hangs = new Set<() => void>();

  // One McpServer per HTTP request: the request that carried a call is the one the factory got.
  const handler = createMcpHandler(({ requestInfo }) => {
    const token = bearer(requestInfo?.headers.get('authorization') ?? undefined);
    const server = new McpServer({ name: 'io-bridge-mcp-test-server', version: '1.0.0' });
    server.registerTool(
      'whoami',
      { description: 'The bearer token of the HTTP request that carried this call, or "none".' },
      () => text(token ?? 'none'),
    );
    server.registerTool(
      'add',
      { description: 'Adds two numbers.', inputSchema: z.object({ a: z.number(), b: z.number() }) },
      ({ a, b }) => text(String(a + b)),
    );
    server.registerTool(
      'hang',
      { description: 'Never answers (until the server stops).', inputSchema: z.object({}) },
      (_args, ctx) =>
        new Promise((resolve) => {
          const release = () => {
            hangs.delete(release);
            resolve(text('released'));
          };
          hangs.add(release);
          ctx.mcpReq.signal.addEventListener('abort', release, { once: true });
        }),
    );
    server.registerTool(
      'big',
      {
        description: 'A text of `bytes` x characters.',
        inputSchema: z.object({ bytes: z.number().int().min(0) }),
      },
      ({ bytes }) => text('x'.repeat(bytes)),
    );
    server.registerTool(
      'echo',
      { description: 'Returns the text.', inputSchema: z.object({ text: z.string() }) },
      ({ text: value }) => text(value),
    );
    server.registerTool(
      'reports.latest',
      {
        description: 'The latest report (a name no provider takes as a function name).',
        inputSchema: z.object({}),
      },
      () => text('the latest report'),
    );
    server.registerTool(
      'fail',
      { description: 'Fails, as a tool that reports an error does.', inputSchema: z.object({}) },
      () => ({ ...text('the ledger is locked'), isError: true }),
    );
    return server;
  });
  const serve = toNodeHandler(handler);

  const onRequest = async (req: IncomingMessage, res: ServerResponse) => {
    const authorization = req.headers.authorization;
    const entry: McpTestRequest = {
      httpMethod: req.method ?? 'GET',
      ...(authorization !== undefined ? { authorization } : {}),
      ...(bearer(authorization) !== undefined ? { token: bearer(authorization) } : {}),
      methods: [],
    };
    requests.push(entry);
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      // Not JSON: the MCP handler answers it (with a parse error), the log keeps no method.
    }
    Object.assign(entry, describe(body));
    if (options.requireToken && !options.requireToken(entry.token)) {
      entry.rejected = 401;
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized' }, id: null }));
      return;
    }
    // The body was read here, so the handler takes it parsed (a body that was no JSON goes as text).
    await serve(req, res, body ?? (raw || undefined));
  };

  const sockets = new Set<Socket>();
  const http = createServer((req, res) => {
    onRequest(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  http.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (http.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      // Connections go first, so a hung call's client sees the connection drop, not an answer.
      for (const socket of sockets) socket.destroy();
      for (const release of [...hangs]) release();
      await handler.close();
      await closed;
    })());

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    requests,
    toolCalls: (tool) => requests.filter((r) => r.methods.includes('tools/call') && r.tool === tool),
    hanging: () => hangs.size,
    close,
  };
}

// Run directly (`node test/support/mcp-test-server.ts`, PORT set): serve until killed.
if (/mcp-test-server\.[cm]?[jt]s$/.test(process.argv[1] ?? '') && process.env.PORT) {
  const required = process.env.MCP_REQUIRE_TOKEN;
  startMcpTestServer({
    port: Number(process.env.PORT),
    ...(required ? { requireToken: (token: string | undefined) => token === required } : {}),
  }).then(
    (server) => {
      console.log(`mcp test server listening on ${server.url}`);
      const stop = () => void server.close().then(() => process.exit(0));
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
