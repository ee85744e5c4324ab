import { z } from 'zod';
import { buildInfo } from '../common/build-info';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30m`, `12h`, `1d` in milliseconds (the format is checked before). */
export function durationMs(duration: string): number {
  const unit = duration.slice(-1) as keyof typeof UNIT_MS;
  return Number(duration.slice(0, -1)) * UNIT_MS[unit];
}

/** Why a CORS_ORIGINS entry is not an origin as a browser sends it in `Origin`, or undefined when it is. */
function originProblem(entry: string): string | undefined {
  const example = 'an origin such as https://app.example.com or http://localhost:4200';
  if (entry.includes('*'))
    return `'${entry}': wildcards inside an origin are not supported; list each origin, or '*' alone`;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return `'${entry}' is not ${example}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `'${entry}' is not ${example}`;
  // A browser compares the exact text: a path, a trailing slash, upper case or a default port never match.
  if (url.origin !== entry) return `'${entry}' is not ${example}; did you mean ${url.origin}?`;
  return undefined;
}

/** `*` (any origin), or a comma-separated list of origins; empty means no browser origin. */
const corsOrigins = z.string().transform((value, ctx): '*' | string[] => {
  const entries = value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  if (entries.includes('*')) {
    if (entries.length > 1) ctx.addIssue({ code: 'custom', message: "'*' allows any origin: use it alone" });
    return '*';
  }
  for (const problem of entries.map(originProblem))
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  return entries;
});

type Section = 'general' | 'jwt' | 'header';

/** One environment variable: everything about it, in one place. */
export type Variable = {
  /** Its validation; a default is the schema's `.default()`, a transformation its `.transform()`. */
  schema: z.ZodType;
  /** Where AppConfig holds the value (a dotted path, or several); none: only DERIVED values read it. */
  at?: string | readonly string[];
  /** What it means: docs/configuration.md shows it as is. */
  doc: string;
  /** The Default column of docs/configuration.md for a variable without a default; `unset` when not given. */
  unset?: string;
  /** Its table in docs/configuration.md: `general` (Variables), or an AUTH_MODE's (`jwt`, `header`). */
  table?: Section;
};

/**
 * Every variable the service reads, validated once at boot: the schema, the AppConfig type, the
 * defaults and the configuration tables of docs/configuration.md are all derived from this table
 * (config-docs.spec.ts keeps them in step). Adding a variable is adding its entry here (then `npm run config:docs`).
 */
export const VARIABLES = {
  NODE_ENV: {
    schema: z.string().default('development'),
    at: 'env',
    doc: '`production` (as in the image) keeps log lines JSON even on a terminal',
  },
  HOST: {
    schema: z.string().min(1).default('127.0.0.1'),
    at: 'host',
    doc: 'where to listen (`0.0.0.0` in containers)',
  },
  PORT: { schema: int(0, 65535).default(3000), at: 'port', doc: 'the port to listen on' },
  IO_BRIDGE_PREFIX: {
    schema: z
      .string()
      .regex(/^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$|^\/$/, 'must start with / and not end with /')
      .transform((prefix) => (prefix === '/' ? '' : prefix))
      .default('/io-bridge'),
    at: 'prefix',
    doc: 'route prefix (`/` for none)',
  },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']).default('log'),
    at: 'logLevel',
    doc: '`fatal`, `error`, `warn`, `log`, `debug`, `verbose`',
  },
  DATABASE_URL: {
    schema: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
    at: 'database.url',
    doc: '`postgres://…` of your database',
    unset: 'unset: embedded Postgres',
  },
  DATABASE_POOL_SIZE: {
    schema: int(1, 200).default(10),
    at: 'database.poolSize',
    doc: 'connections per instance (plus one for `LISTEN`)',
  },
  DATABASE_CONNECT_TIMEOUT_MS: {
    schema: int(100, 600_000).default(5_000),
    at: 'database.timeouts.connectMs',
    doc: 'opening a database connection, or waiting for a free one in the pool; past it the request is 503 `SERVICE_UNAVAILABLE`',
  },
  DATABASE_STATEMENT_TIMEOUT_MS: {
    schema: int(100, 3_600_000).default(10_000),
    at: 'database.timeouts.statementMs',
    doc: 'Postgres cancels a statement running longer (`statement_timeout`); every statement of the service takes milliseconds',
  },
  DATABASE_QUERY_TIMEOUT_MS: {
    schema: int(100, 3_600_000).default(12_000),
    at: 'database.timeouts.queryMs',
    doc: 'the client stops waiting for an answer (a frozen server cannot enforce its own timeout); at least the statement timeout, so a live server answers first',
  },
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: {
    schema: int(100, 3_600_000).default(15_000),
    at: 'database.timeouts.idleInTransactionMs',
    doc: 'Postgres closes a session left idle inside a transaction, releasing its locks',
  },
  EMBEDDED_PG_DIR: {
    schema: z.string().min(1).default('.data/postgres'),
    at: 'database.embeddedDir',
    doc: "the embedded database's data directory (without `DATABASE_URL`)",
  },
  EMBEDDED_PG_PORT: {
    schema: int(1, 65535).default(54329),
    at: 'database.embeddedPort',
    doc: "the embedded database's port",
  },
  MIGRATIONS_RUN: {
    schema: bool.default(true),
    at: 'database.migrationsRun',
    doc: 'run pending migrations at start-up (`false` to leave it to a deploy job)',
  },
  MODEL: {
    schema: z
      .string()
      .regex(
        /^(scripted|[a-z0-9-]+\/\S+)$/,
        "must be 'scripted' or a provider/model id such as openai/gpt-4o-mini",
      )
      .default('scripted'),
    at: 'model.id',
    doc: "a Mastra model id (`openai/gpt-4o-mini`, `anthropic/claude-sonnet-4-5`, with the provider's key in its usual variable such as `OPENAI_API_KEY`)",
  },
  OPENAI_BASE_URL: {
    schema: z.url().optional(),
    at: 'model.openaiBaseUrl',
    doc: 'any OpenAI-compatible server (Ollama, vLLM); `MODEL` then names `<provider>/<model>`',
  },
  OPENAI_API_KEY: {
    schema: z.string().optional(),
    at: 'model.openaiApiKey',
    doc: 'the key for OpenAI, or for the server at `OPENAI_BASE_URL`',
  },
  MODEL_RETRIES: {
    schema: int(0, 20).default(2),
    at: 'model.retries',
    doc: 'retries of a provider call that failed before showing anything (429, 5xx, connection lost), honouring `Retry-After`; `forwardedProps.modelSettings.maxRetries` sets it per run',
  },
  MODEL_RETRY_BACKOFF_MS: {
    schema: int(0, 60_000).default(500),
    at: 'model.backoffMs',
    doc: "the first retry's wait when the provider names none, doubled for each next one",
  },
  MODEL_FIRST_TOKEN_TIMEOUT_MS: {
    schema: int(0, 3_600_000).default(120_000),
    at: 'model.firstTokenTimeoutMs',
    doc: 'a provider call showing nothing for this long fails with `MODEL_TIMEOUT` (`0`: no limit)',
  },
  MODEL_IDLE_TIMEOUT_MS: {
    schema: int(0, 3_600_000).default(60_000),
    at: 'model.idleTimeoutMs',
    doc: 'a provider stream silent for this long once it has begun fails with `MODEL_TIMEOUT` (`0`: no limit)',
  },
  MODEL_CONTEXT_TOKENS: {
    schema: int(256, 10_000_000).default(128_000),
    at: 'model.contextTokens',
    doc: "the model's context window in tokens: a thread's history is fitted into it, the newest messages kept (an agent's `contextTokens` in `AGENTS_CONFIG` wins)",
  },
  TOKEN_BUDGET_PER_OWNER: {
    schema: int(0, Number.MAX_SAFE_INTEGER).optional(),
    at: 'budgets.tokens',
    doc: "tokens (input plus output) an owner's runs may spend per `TOKEN_BUDGET_WINDOW`; past it a run is refused (429 `QUOTA_EXCEEDED`) or ends after its step (`RUN_ERROR QUOTA_EXCEEDED`); `PUT /admin/quotas/:resourceId` sets one owner's",
    unset: 'unset (no budget)',
  },
  TOKEN_BUDGET_WINDOW: {
    schema: z
      .string()
      .regex(/^\d+(s|m|h|d)$/, 'must be a duration such as 30m, 12h or 1d')
      .default('1d'),
    doc: 'the sliding window budgets count over: `30m`, `12h`, `1d`, `7d`…',
  },
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
  MASTRA_ENTRY: {
    schema: z.string().min(1).optional(),
    at: 'mastraEntry',
    doc: "a module exporting `mastra`, your Mastra project's instance (`src/mastra/index.ts`, JavaScript or TypeScript): its agents are served instead of the built-in ones (see [Agents](agents.md#your-own-mastra-project))",
    unset: 'unset: the built-in agents',
  },
  AGENTS_CONFIG: {
    schema: z.string().min(1).optional(),
    at: 'agentsConfigPath',
    doc: 'a JSON or YAML file of agents and their MCP servers: whole agents, or changes to the built-in ones; read again when it changes (see [Agents](agents.md#agents-in-configuration))',
  },
  AGENTS_CONFIG_POLL_MS: {
    schema: int(0, 3_600_000).default(2_000),
    at: 'agentsConfigPollMs',
    doc: "how often `AGENTS_CONFIG` is checked for a change (a ConfigMap update): new runs get the new agents, running runs finish on theirs; a change that doesn't validate is refused with a log line (`0`: read at start-up only)",
  },
  MCP_CONNECT_WAIT_MS: {
    schema: int(0, 600_000).default(10_000),
    at: 'mcpConnectWaitMs',
    doc: 'how long start-up (or a reload) waits for the MCP servers of `AGENTS_CONFIG` to connect; one not there by then is shown `unavailable` in `GET /agents` and reconnects with backoff, and the service starts all the same',
  },
  SHUTDOWN_GRACE_MS: {
    schema: int(0, 3_600_000).default(20_000),
    at: 'shutdownGraceMs',
    doc: 'on SIGTERM: readiness goes red, new runs get 503, live runs are handed over to other replicas and relayed to their clients for this long, then those streams end with `RUN_ERROR RUN_MOVED`; on SIGINT (Ctrl-C) runs may finish for this long, then end with `RUN_ERROR SHUTTING_DOWN`',
  },
  CORS_ORIGINS: {
    schema: corsOrigins.optional().transform((origins) => origins ?? []),
    at: 'corsOrigins',
    doc: '`*` (any origin) or comma-separated origins such as `https://app.example.com,http://localhost:4200` allowed to call from a browser (see [Browser clients](#browser-clients))',
    unset: 'unset (no browser origin allowed)',
  },
  RATE_LIMIT_PER_MINUTE: {
    schema: int(1, 1_000_000).default(120),
    at: 'rateLimitPerMinute',
    doc: '`POST /run` per owner per minute, per instance (429 `RATE_LIMITED`)',
  },
  AUTH_MODE: {
    schema: z.enum(['none', 'jwt', 'header']).default('none'),
    at: 'auth.mode',
    doc: 'who the caller is: `none`, `jwt` or `header` (see [Authentication](#authentication))',
  },
  OIDC_ISSUER: {
    schema: z.url().optional(),
    at: 'auth.oidcIssuer',
    doc: 'expected `iss`; discovery reads `${OIDC_ISSUER}/.well-known/openid-configuration` once',
    unset: 'required',
    table: 'jwt',
  },
  OIDC_AUDIENCE: {
    schema: z.string().min(1).optional(),
    at: 'auth.oidcAudience',
    doc: "expected `aud` (the API's client id or identifier)",
    unset: 'required',
    table: 'jwt',
  },
  OIDC_JWKS_URI: {
    schema: z.url().optional(),
    at: 'auth.oidcJwksUri',
    doc: 'the JWKS URL, skipping discovery',
    unset: 'from discovery',
    table: 'jwt',
  },
  OIDC_CLIENT_ID: {
    schema: z.string().min(1).optional(),
    at: 'auth.oidcClientId',
    doc: 'the public client Swagger UI and the playground sign in with (authorization code with PKCE; its redirect URIs include `<service URL>/docs/oauth2-redirect.html` and `<service URL>/playground/`); unset, the playground offers no sign-in and Swagger UI asks for a client id',
    table: 'jwt',
  },
  RESOURCE_ID_CLAIM: {
    schema: z.string().min(1).default('sub'),
    at: 'auth.resourceIdClaim',
    doc: 'the claim that is the owner (`oid`, `preferred_username`, `email`…)',
    table: 'jwt',
  },
  REQUEST_CONTEXT_CLAIMS: {
    schema: z
      .string()
      .default('sub,name,email,preferred_username')
      .transform((list) =>
        list
          .split(',')
          .map((claim) => claim.trim())
          .filter(Boolean),
      ),
    at: 'auth.contextClaims',
    doc: "comma-separated claims (dotted paths allowed) of the caller's token put in every run's request context under `claims`, for agents whose instructions, model or tools depend on the user (see [Agents](agents.md#the-caller-in-the-request-context)); empty for none",
    table: 'jwt',
  },
  ADMIN_ROLE_CLAIM: {
    schema: z.string().min(1).default('roles'),
    at: 'auth.adminRoleClaim',
    doc: 'the claim holding roles: a string or an array; a dotted path such as `realm_access.roles` for Keycloak',
    table: 'jwt',
  },
  ADMIN_ROLE: {
    schema: z.string().min(1).optional(),
    at: 'auth.adminRole',
    doc: 'a token whose `ADMIN_ROLE_CLAIM` holds it is an operator',
    table: 'jwt',
  },
  JWT_CLOCK_TOLERANCE_S: {
    schema: int(0, 300).default(5),
    at: 'auth.clockToleranceS',
    doc: 'allowed clock skew for `exp` and `nbf`',
    table: 'jwt',
  },
  AUTH_HEADER: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .transform((header) => header.toLowerCase())
      .default('x-auth-request-user'),
    at: 'auth.header',
    doc: 'the header holding the user (oauth2-proxy with `--set-xauthrequest`); any case',
    table: 'header',
  },
  AUTH_HEADER_PERCENT_DECODING: {
    schema: bool.default(false),
    at: 'auth.headerPercentDecoding',
    doc: '`true` only when the proxy percent-encodes the user (`jos%C3%A9`): the header is then percent-decoded and a raw byte beyond ASCII is refused; `false`, the header is the user as sent, raw UTF-8 (`josé`). Either way a user with a percent-escape (`%41`) is refused (see [Owners named in headers](identity-headers.md))',
    table: 'header',
  },
  TRUSTED_PROXIES: {
    schema: z
      .string()
      .optional()
      .transform((list) =>
        (list ?? '')
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean),
      ),
    at: 'auth.trustedProxies',
    doc: 'comma-separated addresses or CIDRs of the proxies, IPv4 or IPv6 (`10.0.0.0/8,fd00::/8`); IPv4-mapped IPv6 peers match IPv4 entries',
    unset: 'required',
    table: 'header',
  },
  PLAYGROUND_ENABLED: {
    schema: bool.optional(),
    doc: 'serve the chat page at `/playground` (it calls the API like any client)',
    unset: 'on, off with `NODE_ENV=production`',
  },
  // OpenTelemetry's standard variables: traces go to `<endpoint>/v1/traces`, or to the traces endpoint as given.
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    schema: z.url().optional(),
    doc: 'an OTLP/HTTP collector, e.g. `http://otel-collector:4318`: spans go to `<endpoint>/v1/traces`, JSON; see [Traces](operations.md#traces)',
    unset: 'unset (no tracing)',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    schema: z.url().optional(),
    doc: 'the traces endpoint, used as given (instead of `OTEL_EXPORTER_OTLP_ENDPOINT`)',
    unset: 'unset (no tracing)',
  },
  OTEL_SERVICE_NAME: {
    schema: z.string().min(1).default('io-bridge'),
    at: 'tracing.serviceName',
    doc: "the traces' `service.name`",
  },
  OTEL_SDK_DISABLED: {
    schema: bool.default(false),
    doc: '`true` turns tracing off whatever the endpoint',
  },
} as const satisfies Record<string, Variable>;

/** Variables read by name pattern, not one by one. */
export const AGENT_VARIABLES = {
  pattern: /^AGENT_[A-Z0-9_]+_(MODEL|INSTRUCTIONS)$/,
  names: ['AGENT_<ID>_MODEL', 'AGENT_<ID>_INSTRUCTIONS'],
  doc: "an agent's `model` and `instructions` from the environment (wins over `AGENTS_CONFIG`)",
} as const;

type Variables = typeof VARIABLES;
type Name = keyof Variables;
/** Each variable as parsed. */
export type Env = { [K in Name]: z.output<Variables[K]['schema']> };

/** The values of AppConfig that are not one variable as parsed. */
const DERIVED = {
  'tracing.url': (e: Env) =>
    e.OTEL_SDK_DISABLED
      ? undefined
      : tracesUrl(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, e.OTEL_EXPORTER_OTLP_ENDPOINT),
  'tracing.serviceVersion': (): string => buildInfo().version,
  'budgets.windowMs': (e: Env): number => durationMs(e.TOKEN_BUDGET_WINDOW),
  'playground.enabled': (e: Env): boolean => e.PLAYGROUND_ENABLED ?? e.NODE_ENV !== 'production',
  /** Environment overrides `AGENT_<ID>_MODEL` / `AGENT_<ID>_INSTRUCTIONS`, by agent id. */
  agentEnv: (_e: Env, raw: Record<string, string>): Record<string, string | undefined> =>
    Object.fromEntries(Object.entries(raw).filter(([key]) => AGENT_VARIABLES.pattern.test(key))),
};

const envSchema = z.object(
  Object.fromEntries(Object.entries(VARIABLES).map(([name, v]) => [name, v.schema])) as {
    [K in Name]: Variables[K]['schema'];
  },
);

// AppConfig, from the table: each variable's value at its `at` path(s), and each DERIVED value at its own.
type PathsOf<V> = V extends { at: infer At }
  ? At extends readonly string[]
    ? At[number]
    : At & string
  : never;
type Nest<Path extends string, Value> = Path extends `${infer Head}.${infer Rest}`
  ? { [K in Head]: Nest<Rest, Value> }
  : { [K in Path]: Value };
type Placed =
  | { [K in Name]: Nest<PathsOf<Variables[K]>, Env[K]> }[Name]
  | { [P in keyof typeof DERIVED]: Nest<P, ReturnType<(typeof DERIVED)[P]>> }[keyof typeof DERIVED];
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
type Flat<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]: Flat<T[K]> } : T;

/** The typed configuration, as the service reads it. */
export type AppConfig = Flat<Intersection<Placed>>;
/** Timeouts so a database that is down or frozen gives errors, never hangs (see dataSourceOptions). */
export type DatabaseTimeouts = AppConfig['database']['timeouts'];

function place(config: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop()!;
  let node = config;
  for (const key of keys) node = (node[key] ??= {}) as Record<string, unknown>;
  node[last] = value;
}

export class ConfigError extends Error {
  /** Invalid settings, each `VARIABLE: problem and fix`: one problem is one line, several one line each. */
  static invalid(problems: string[]): ConfigError {
    return new ConfigError(
      problems.length === 1
        ? `Invalid configuration: ${problems[0]}`
        : `Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
  }
}

/** Parses the environment into the typed configuration, or throws a message naming every bad variable. */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  /** `projectAgents`: a host app gives its Mastra instance, whose agents bring their own models. */
  options: { projectAgents?: boolean } = {},
): AppConfig {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '',
    ),
  );
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw ConfigError.invalid(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data as Env;
  const authProblem =
    e.AUTH_MODE === 'jwt' && !e.OIDC_ISSUER
      ? 'OIDC_ISSUER: required with AUTH_MODE=jwt'
      : e.AUTH_MODE === 'jwt' && !e.OIDC_AUDIENCE
        ? 'OIDC_AUDIENCE: required with AUTH_MODE=jwt'
        : e.AUTH_MODE === 'header' && !cleaned.TRUSTED_PROXIES
          ? 'TRUSTED_PROXIES: required with AUTH_MODE=header (comma-separated CIDRs)'
          : undefined;
  if (authProblem) throw ConfigError.invalid([authProblem]);
  if (e.DATABASE_QUERY_TIMEOUT_MS < e.DATABASE_STATEMENT_TIMEOUT_MS) {
    throw ConfigError.invalid([
      'DATABASE_QUERY_TIMEOUT_MS: must be at least DATABASE_STATEMENT_TIMEOUT_MS (a live server should time out first)',
    ]);
  }
  // MODEL is the built-in agents' (a project's agents, MASTRA_ENTRY's or a host's, bring their own models).
  if (e.OPENAI_BASE_URL && e.MODEL === 'scripted' && !e.MASTRA_ENTRY && !options.projectAgents) {
    throw ConfigError.invalid([
      'MODEL: OPENAI_BASE_URL needs MODEL=<provider>/<model>, e.g. ollama/llama3.1',
    ]);
  }
  const config: Record<string, unknown> = {};
  for (const [name, variable] of Object.entries(VARIABLES) as Array<[Name, Variable]>) {
    const paths =
      variable.at === undefined ? [] : typeof variable.at === 'string' ? [variable.at] : variable.at;
    for (const path of paths) place(config, path, e[name]);
  }
  for (const [path, derive] of Object.entries(DERIVED)) place(config, path, derive(e, cleaned));
  return config as AppConfig;
}

/** Where spans go, with OpenTelemetry's semantics: the signal endpoint as is, or the base one plus /v1/traces. */
function tracesUrl(traces?: string, base?: string): string | undefined {
  if (traces) return traces;
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}
