import { z } from 'zod';
import { buildInfo } from '../common/build-info';
import { AGENT_SOURCE_VARIABLES, AGENT_VARIABLES, MODEL_VARIABLES } from './agent-variables';
import { AUTH_VARIABLES } from './auth-variables';
import { MEMORY_VARIABLES, REQUEST_VARIABLES, RUN_VARIABLES } from './run-variables';
import { DATABASE_VARIABLES, EDGE_VARIABLES, SERVER_VARIABLES, TRACING_VARIABLES } from './server-variables';
import type { Variable } from './variable';

export type { Variable } from './variable';
export { AGENT_VARIABLES } from './agent-variables';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30m`, `12h`, `1d` in milliseconds (the format is checked before). */
export function durationMs(duration: string): number {
  const unit = duration.slice(-1) as keyof typeof UNIT_MS;
  return Number(duration.slice(0, -1)) * UNIT_MS[unit];
}

/**
 * Every variable the service reads, validated once at boot: the schema, the AppConfig type, the
 * defaults and the configuration tables of docs/configuration.md are all derived from this table
 * (config-docs.spec.ts keeps them in step). Its parts live by subject in the `*-variables.ts` files;
 * they are spread here in the order of docs/configuration.md. Adding a variable is adding its entry
 * to its subject's part (then `npm run config:docs`).
 */
export const VARIABLES = {
  ...SERVER_VARIABLES,
  ...DATABASE_VARIABLES,
  ...MODEL_VARIABLES,
  ...REQUEST_VARIABLES,
  ...RUN_VARIABLES,
  ...MEMORY_VARIABLES,
  ...AGENT_SOURCE_VARIABLES,
  ...EDGE_VARIABLES,
  ...AUTH_VARIABLES,
  ...TRACING_VARIABLES,
} as const satisfies Record<string, Variable>;

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
