import { z } from 'zod';
import { int, Variable } from './variable';

// The models and the agents that call them: which model, its retries and timeouts, token budgets,
// and where the agents come from. Each group keeps its place in docs/configuration.md: config.ts
// spreads the groups in the page's order.

/** The model of the built-in agents, its provider calls, and token budgets. */
export const MODEL_VARIABLES = {
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
} as const satisfies Record<string, Variable>;

/** Where the agents come from: a Mastra project, a file of agents and their MCP servers. */
export const AGENT_SOURCE_VARIABLES = {
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
} as const satisfies Record<string, Variable>;

/** Variables read by name pattern, not one by one. */
export const AGENT_VARIABLES = {
  pattern: /^AGENT_[A-Z0-9_]+_(MODEL|INSTRUCTIONS)$/,
  names: ['AGENT_<ID>_MODEL', 'AGENT_<ID>_INSTRUCTIONS'],
  doc: "an agent's `model` and `instructions` from the environment (wins over `AGENTS_CONFIG`)",
} as const;
