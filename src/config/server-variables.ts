import { z } from 'zod';
import { corsOrigins } from './cors-origins';
import { bool, int, Variable } from './variable';

// The service itself: where it listens and logs, its database, its edge (shutdown, browsers, rate)
// and what it shows of itself (the playground, traces). Each group keeps its place in
// docs/configuration.md: config.ts spreads the groups in the page's order.

/** Where the service listens, and how it logs. */
export const SERVER_VARIABLES = {
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
} as const satisfies Record<string, Variable>;

/** The database: where, how many connections, how long to wait; the embedded one and migrations. */
export const DATABASE_VARIABLES = {
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
} as const satisfies Record<string, Variable>;

/** The HTTP edge: shutdown, browser origins, the rate of new runs. */
export const EDGE_VARIABLES = {
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
} as const satisfies Record<string, Variable>;

/** What the service shows of itself: the playground page and traces. */
export const TRACING_VARIABLES = {
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
