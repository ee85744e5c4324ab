import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

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

/** Every variable the service reads, validated once at boot. */
const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(0, 65535).default(3000),
  IO_BRIDGE_PREFIX: z
    .string()
    .regex(/^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$|^\/$/, 'must start with / and not end with /')
    .default('/io-bridge'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']).default('log'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_POOL_SIZE: int(1, 200).default(10),
  DATABASE_CONNECT_TIMEOUT_MS: int(100, 600_000).default(5_000),
  DATABASE_STATEMENT_TIMEOUT_MS: int(100, 3_600_000).default(10_000),
  DATABASE_QUERY_TIMEOUT_MS: int(100, 3_600_000).default(12_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(100, 3_600_000).default(15_000),
  EMBEDDED_PG_DIR: z.string().min(1).default('.data/postgres'),
  EMBEDDED_PG_PORT: int(1, 65535).default(54329),
  MIGRATIONS_RUN: bool.default(true),
  MODEL: z
    .string()
    .regex(
      /^(scripted|[a-z0-9-]+\/\S+)$/,
      "must be 'scripted' or a provider/model id such as openai/gpt-4o-mini",
    )
    .default('scripted'),
  OPENAI_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().optional(),
  DEFAULT_AGENT_ID: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .default('assistant'),
  HEARTBEAT_MS: int(10, 600_000).default(15_000),
  MAX_BODY_BYTES: int(1024, 64 * 1024 * 1024).default(4 * 1024 * 1024),
  MAX_MESSAGES: int(1, 100_000).default(1000),
  MAX_TOOLS: int(0, 1000).default(128),
  MAX_CONTEXT: int(0, 10_000).default(128),
  MAX_STEPS: int(1, 100).default(10),
  FRONTEND_TOOL_TIMEOUT_MS: int(1, 86_400_000).default(300_000),
  RUN_LEASE_MS: int(300, 600_000).default(20_000),
  RUN_EVENTS_RETENTION_MS: int(1_000, 7 * 86_400_000).default(900_000),
  RUN_EVENTS_FLUSH_MS: int(10, 60_000).default(250),
  STREAM_MAX_QUEUED_BYTES: int(65_536, 1024 * 1024 * 1024).default(1024 * 1024),
  RUN_DISCONNECT_GRACE_MS: int(0, 86_400_000).default(0),
  RUN_DISCONNECT_GRACE_MAX_MS: int(0, 86_400_000).default(600_000),
  LAST_MESSAGES: int(0, 10_000).default(40),
  STORE_ALL_RUNS: bool.default(false),
  MAX_LAST_MESSAGES: int(1, 10_000).default(1000),
  MODEL_MAX_TOKENS: int(1, 10_000_000).default(16_384),
  MODEL_MAX_RETRIES: int(0, 20).default(5),
  AGENTS_CONFIG: z.string().min(1).optional(),
  SHUTDOWN_GRACE_MS: int(0, 3_600_000).default(20_000),
  CORS_ORIGINS: corsOrigins.optional(),
  RATE_LIMIT_PER_MINUTE: int(1, 1_000_000).default(120),
  AUTH_MODE: z.enum(['none', 'jwt', 'header']).default('none'),
  OIDC_ISSUER: z.url().optional(),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  OIDC_JWKS_URI: z.url().optional(),
  RESOURCE_ID_CLAIM: z.string().min(1).default('sub'),
  ADMIN_ROLE_CLAIM: z.string().min(1).default('roles'),
  ADMIN_ROLE: z.string().min(1).optional(),
  JWT_CLOCK_TOLERANCE_S: int(0, 300).default(5),
  AUTH_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/)
    .default('x-auth-request-user'),
  TRUSTED_PROXIES: z.string().optional(),
  // OpenTelemetry's standard variables: traces go to `<endpoint>/v1/traces`, or to the traces endpoint as given.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('io-bridge'),
  OTEL_SDK_DISABLED: bool.default(false),
});

export type DatabaseTimeouts = {
  /** Opening a connection, and waiting for a free one in the pool. */
  connectMs: number;
  /** Server side: Postgres cancels a statement running longer. */
  statementMs: number;
  /** Client side: how long to wait for any answer, for a server too frozen to enforce its own timeout. */
  queryMs: number;
  /** Server side: a session idle inside a transaction this long is closed, releasing its locks. */
  idleInTransactionMs: number;
};

export type AppConfig = {
  env: string;
  host: string;
  port: number;
  prefix: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  database: {
    url?: string;
    poolSize: number;
    embeddedDir: string;
    embeddedPort: number;
    migrationsRun: boolean;
    /** Timeouts so a database that is down or frozen gives errors, never hangs (see dataSourceOptions). */
    timeouts: DatabaseTimeouts;
  };
  model: { id: string; openaiBaseUrl?: string; openaiApiKey?: string };
  defaultAgentId: string;
  heartbeatMs: number;
  limits: {
    maxBodyBytes: number;
    maxMessages: number;
    maxTools: number;
    maxContext: number;
    maxSteps: number;
  };
  frontendToolTimeoutMs: number;
  /** How long a run's lease lasts without renewal; a dead instance's runs are freed after it. */
  runLeaseMs: number;
  /** How many stored messages the model sees by default. */
  lastMessages: number;
  /** Event logs of runs (GET /runs/:runId/events). */
  runEvents: {
    /** How long a run's events are kept after it ended. */
    retentionMs: number;
    /** How often the events of running runs are stored (at once while another instance follows one). */
    flushMs: number;
    /** Frames a slow stream may queue before it stops taking live events and catches up from storage. */
    maxQueuedBytes: number;
  };
  /** How long a run whose client left goes on, for a reader to rejoin: the default, and the most a client may ask. */
  disconnectGrace: { defaultMs: number; maxMs: number };
  /** Store every run in its thread, even one that names no memory (CONTRACT section 2 stores only those that do). */
  storeAllRuns: boolean;
  /** Ceilings for what a client may ask through forwardedProps. */
  ceilings: {
    maxTokens: number;
    maxSteps: number;
    maxRetries: number;
    maxLastMessages: number;
    maxDisconnectGraceMs: number;
  };
  /** On SIGTERM, how long active runs may go on before they end with SHUTTING_DOWN. */
  shutdownGraceMs: number;
  /** Origins a browser may call from: `*` for any, none when empty. */
  corsOrigins: '*' | string[];
  /** `POST /run` per owner per minute, per instance. */
  rateLimitPerMinute: number;
  /** A JSON file overriding agents' model and instructions (e.g. a mounted ConfigMap). */
  agentsConfigPath?: string;
  /** Environment overrides `AGENT_<ID>_MODEL` / `AGENT_<ID>_INSTRUCTIONS`, by agent id. */
  agentEnv: Record<string, string | undefined>;
  auth: {
    mode: 'none' | 'jwt' | 'header';
    oidcIssuer?: string;
    oidcAudience?: string;
    oidcJwksUri?: string;
    resourceIdClaim: string;
    adminRoleClaim: string;
    adminRole?: string;
    clockToleranceS: number;
    header: string;
    /** CIDRs (IPv4 or IPv6) a header-mode request must come from. */
    trustedProxies: string[];
  };
  /** OTLP/HTTP trace export: off (no provider registered) without a URL. */
  tracing: { url?: string; serviceName: string; serviceVersion: string };
};

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
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw ConfigError.invalid(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  const e = parsed.data;
  const authProblem =
    e.AUTH_MODE === 'jwt' && !e.OIDC_ISSUER
      ? 'OIDC_ISSUER: required with AUTH_MODE=jwt'
      : e.AUTH_MODE === 'jwt' && !e.OIDC_AUDIENCE
        ? 'OIDC_AUDIENCE: required with AUTH_MODE=jwt'
        : e.AUTH_MODE === 'header' && !e.TRUSTED_PROXIES
          ? 'TRUSTED_PROXIES: required with AUTH_MODE=header (comma-separated CIDRs)'
          : undefined;
  if (authProblem) throw ConfigError.invalid([authProblem]);
  if (e.DATABASE_QUERY_TIMEOUT_MS < e.DATABASE_STATEMENT_TIMEOUT_MS) {
    throw ConfigError.invalid([
      'DATABASE_QUERY_TIMEOUT_MS: must be at least DATABASE_STATEMENT_TIMEOUT_MS (a live server should time out first)',
    ]);
  }
  if (e.OPENAI_BASE_URL && e.MODEL === 'scripted') {
    throw ConfigError.invalid([
      'MODEL: OPENAI_BASE_URL needs MODEL=<provider>/<model>, e.g. ollama/llama3.1',
    ]);
  }
  return {
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    prefix: e.IO_BRIDGE_PREFIX === '/' ? '' : e.IO_BRIDGE_PREFIX,
    logLevel: e.LOG_LEVEL,
    database: {
      url: e.DATABASE_URL,
      poolSize: e.DATABASE_POOL_SIZE,
      embeddedDir: e.EMBEDDED_PG_DIR,
      embeddedPort: e.EMBEDDED_PG_PORT,
      migrationsRun: e.MIGRATIONS_RUN,
      timeouts: {
        connectMs: e.DATABASE_CONNECT_TIMEOUT_MS,
        statementMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
        queryMs: e.DATABASE_QUERY_TIMEOUT_MS,
        idleInTransactionMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      },
    },
    model: { id: e.MODEL, openaiBaseUrl: e.OPENAI_BASE_URL, openaiApiKey: e.OPENAI_API_KEY },
    defaultAgentId: e.DEFAULT_AGENT_ID,
    heartbeatMs: e.HEARTBEAT_MS,
    limits: {
      maxBodyBytes: e.MAX_BODY_BYTES,
      maxMessages: e.MAX_MESSAGES,
      maxTools: e.MAX_TOOLS,
      maxContext: e.MAX_CONTEXT,
      maxSteps: e.MAX_STEPS,
    },
    frontendToolTimeoutMs: e.FRONTEND_TOOL_TIMEOUT_MS,
    runLeaseMs: e.RUN_LEASE_MS,
    lastMessages: e.LAST_MESSAGES,
    runEvents: {
      retentionMs: e.RUN_EVENTS_RETENTION_MS,
      flushMs: e.RUN_EVENTS_FLUSH_MS,
      maxQueuedBytes: e.STREAM_MAX_QUEUED_BYTES,
    },
    disconnectGrace: {
      defaultMs: Math.min(e.RUN_DISCONNECT_GRACE_MS, e.RUN_DISCONNECT_GRACE_MAX_MS),
      maxMs: e.RUN_DISCONNECT_GRACE_MAX_MS,
    },
    storeAllRuns: e.STORE_ALL_RUNS,
    ceilings: {
      maxTokens: e.MODEL_MAX_TOKENS,
      maxSteps: e.MAX_STEPS,
      maxRetries: e.MODEL_MAX_RETRIES,
      maxLastMessages: e.MAX_LAST_MESSAGES,
      maxDisconnectGraceMs: e.RUN_DISCONNECT_GRACE_MAX_MS,
    },
    agentsConfigPath: e.AGENTS_CONFIG,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    corsOrigins: e.CORS_ORIGINS ?? [],
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    agentEnv: Object.fromEntries(
      Object.entries(cleaned).filter(([key]) => /^AGENT_[A-Z0-9_]+_(MODEL|INSTRUCTIONS)$/.test(key)),
    ),
    auth: {
      mode: e.AUTH_MODE,
      oidcIssuer: e.OIDC_ISSUER,
      oidcAudience: e.OIDC_AUDIENCE,
      oidcJwksUri: e.OIDC_JWKS_URI,
      resourceIdClaim: e.RESOURCE_ID_CLAIM,
      adminRoleClaim: e.ADMIN_ROLE_CLAIM,
      adminRole: e.ADMIN_ROLE,
      clockToleranceS: e.JWT_CLOCK_TOLERANCE_S,
      header: e.AUTH_HEADER.toLowerCase(),
      trustedProxies: (e.TRUSTED_PROXIES ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter(Boolean),
    },
    tracing: {
      url: e.OTEL_SDK_DISABLED
        ? undefined
        : tracesUrl(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, e.OTEL_EXPORTER_OTLP_ENDPOINT),
      serviceName: e.OTEL_SERVICE_NAME,
      serviceVersion: SERVICE_VERSION,
    },
  };
}

/** The service's version, as traces report it. */
const SERVICE_VERSION = '0.1.0';

/** Where spans go, with OpenTelemetry's semantics: the signal endpoint as is, or the base one plus /v1/traces. */
function tracesUrl(traces?: string, base?: string): string | undefined {
  if (traces) return traces;
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}
