import type { Message } from '@ag-ui/core';
import { errorOf } from './errors';
import { RunStream } from './run-stream';
import type { RejoinOptions } from './reconnect';
import { ThreadStream } from './thread-stream';
import type {
  Agent,
  AgentList,
  CreateThread,
  ListMessages,
  ListThreads,
  MessagePage,
  Run,
  RunRequest,
  Thread,
  ThreadPage,
  ToolResult,
  UiMessage,
  UpdateThread,
  UsageQuery,
  UsageReport,
} from './types';

/** A bearer token, or a function that gives the current one (a sign-in that refreshes it). */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export type ClientOptions = {
  /** The API: the service's origin plus its route prefix, e.g. `http://localhost:3000/io-bridge`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer` (AUTH_MODE=jwt). */
  token?: TokenSource;
  /** Sent as `X-Resource-Id`: the owner when the server runs with AUTH_MODE=none. */
  resourceId?: string;
  /** How runs reconnect after a drop. */
  rejoin?: RejoinOptions;
  fetch?: typeof fetch;
};

export type RunOptions = {
  /** Aborting it stops reading (the run goes on for its grace period: `cancel()` stops it). */
  signal?: AbortSignal;
  /**
   * How long the server keeps the run going after this connection drops, so the stream can rejoin
   * (`forwardedProps.disconnectGraceMs`; default 30 s).
   */
  disconnectGraceMs?: number;
};

export type JoinOptions = {
  signal?: AbortSignal;
  /** Start after this event id; none: the run from its first event. */
  after?: number;
};

type Query = Record<string, string | number | undefined>;

const seg = encodeURIComponent;

export type FollowOptions = {
  signal?: AbortSignal;
  /** The last event id held (`<run>:<seq>`): the stream goes on after it. */
  after?: string;
};

/** The typed client of io-bridge's public routes. */
export class IoBridgeClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Starts a run (`POST /run`): its events as they stream, rejoining by itself when the connection drops. */
  run(request: RunRequest, options: RunOptions = {}): RunStream {
    const body = {
      tools: [],
      context: [],
      protocolVersion: '1.0',
      ...request,
      forwardedProps: { disconnectGraceMs: options.disconnectGraceMs ?? 30_000, ...request.forwardedProps },
    };
    return new RunStream(
      request.runId,
      async (_after, signal) =>
        this.fetch(`${this.base}/run`, {
          method: 'POST',
          headers: await this.headers({ 'content-type': 'application/json', accept: 'text/event-stream' }),
          body: JSON.stringify(body),
          signal,
        }),
      this.opener(request.runId),
      { ...this.options.rejoin, signal: options.signal },
    );
  }

  /** Joins a run already going (another tab, a reload), or replays one that ended, from `after`. */
  join(runId: string, options: JoinOptions = {}): RunStream {
    const open = this.opener(runId);
    return new RunStream(runId, open, open, { ...this.options.rejoin, ...options });
  }

  /** Stops a run: its stream ends with `RUN_ERROR CANCELLED`. */
  cancel(runId: string): Promise<{ accepted: true }> {
    return this.json('POST', `/runs/${seg(runId)}/cancel`);
  }

  /** Answers a frontend tool call the run waits for. */
  submitToolResult(runId: string, toolCallId: string, result: ToolResult): Promise<{ accepted: true }> {
    return this.json('POST', `/runs/${seg(runId)}/tool-calls/${seg(toolCallId)}/result`, { body: result });
  }

  /** A run's status, the tool calls it waits for, and its usage once recorded. */
  getRun(runId: string): Promise<Run> {
    return this.json('GET', `/runs/${seg(runId)}`);
  }

  agents(): Promise<AgentList> {
    return this.json('GET', '/agents');
  }

  agent(agentId: string): Promise<Agent> {
    return this.json('GET', `/agents/${seg(agentId)}`);
  }

  /** The caller's token usage, by day, agent and model. */
  usage(query: UsageQuery = {}): Promise<UsageReport> {
    return this.json('GET', '/usage', { query });
  }

  readonly threads = {
    list: (query: ListThreads = {}): Promise<ThreadPage> => this.json('GET', '/threads', { query }),
    create: (thread: CreateThread = {}): Promise<Thread> => this.json('POST', '/threads', { body: thread }),
    get: (threadId: string): Promise<Thread> => this.json('GET', `/threads/${seg(threadId)}`),
    update: (threadId: string, patch: UpdateThread): Promise<Thread> =>
      this.json('PATCH', `/threads/${seg(threadId)}`, { body: patch }),
    rename: (threadId: string, title: string): Promise<Thread> =>
      this.json('PATCH', `/threads/${seg(threadId)}`, { body: { title } }),
    delete: (threadId: string): Promise<void> => this.json('DELETE', `/threads/${seg(threadId)}`),
    /**
     * Follows the thread across its runs, live (another tab, another device, a queued run): the
     * active run from its start, then every later run. Never ends by itself: abort `signal`.
     */
    follow: (threadId: string, options: FollowOptions = {}): ThreadStream =>
      new ThreadStream(
        threadId,
        async (after, signal) =>
          this.fetch(`${this.base}/threads/${seg(threadId)}/events`, {
            headers: await this.headers({
              accept: 'text/event-stream',
              ...(after !== undefined ? { 'last-event-id': after } : {}),
            }),
            signal,
          }),
        { ...this.options.rejoin, ...options },
      ),
    /** The latest messages, oldest first, as io.Assist reads them. */
    messages: (threadId: string, query: ListMessages = {}): Promise<MessagePage<UiMessage>> =>
      this.json('GET', `/threads/${seg(threadId)}/messages`, { query: { ...query, format: 'ui' } }),
    /** The latest messages as AG-UI messages, ready for a later run's `messages`. */
    aguiMessages: (threadId: string, query: ListMessages = {}): Promise<MessagePage<Message>> =>
      this.json('GET', `/threads/${seg(threadId)}/messages`, { query: { ...query, format: 'agui' } }),
  };

  private opener(runId: string) {
    return async (after: number | undefined, signal: AbortSignal) =>
      this.fetch(`${this.base}/runs/${seg(runId)}/events`, {
        headers: await this.headers({
          accept: 'text/event-stream',
          ...(after !== undefined ? { 'last-event-id': String(after) } : {}),
        }),
        signal,
      });
  }

  private async headers(extra: Record<string, string> = {}): Promise<Record<string, string>> {
    const { token, resourceId } = this.options;
    const bearer = typeof token === 'function' ? await token() : token;
    return {
      ...extra,
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      ...(resourceId ? { 'x-resource-id': resourceId } : {}),
    };
  }

  private async json<T>(
    method: string,
    path: string,
    init: { query?: Query; body?: unknown } = {},
  ): Promise<T> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(init.query ?? {}))
      if (value !== undefined) params.set(key, String(value));
    const search = params.size ? `?${params}` : '';
    const res = await this.fetch(`${this.base}${path}${search}`, {
      method,
      headers: await this.headers({
        accept: 'application/json',
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      }),
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    });
    if (!res.ok) throw await errorOf(res);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }
}
