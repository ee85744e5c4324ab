import { Agent } from '@mastra/core/agent';
import type { RequestContext } from '@mastra/core/request-context';
import type { Tool } from '@mastra/core/tools';
import { noopLogger } from '@mastra/core/logger';
import { getProviderConfig, parseModelString } from '@mastra/core/llm';
import type { AppConfig } from '../config/config';
import { ConfigError } from '../config/config';
import { AgentDefinition } from './agent-definition';
import { AgentTools, requiresApproval, ToolSnapshot } from './agent-tools';
import { AgentEntry, envKey } from './agents-config';
import { reportingTool } from './tools/run-tools';
import { builtInServerTools } from '../mastra/tools/server-tools';
import { modelProblem, resolveModel } from './model-factory';
import { abortableModel, ModelConfig } from './abortable-model';
import { MastraProject, ProjectMemory } from './mastra-project';
import type { McpServer, McpServerView } from './mcp/mcp-server';
import { Metrics } from '../ops/metrics.service';

type AnyTool = Tool<any, any, any, any, any, any, any>;

export type RegisteredAgent = {
  definition: AgentDefinition;
  agent: Agent;
  /**
   * The agent without its own Mastra `Memory`, for a stateless run (Mastra makes a thread of every
   * run it is given a memory for, read-only or not); `agent` itself when it has none.
   */
  withoutMemory: Agent;
  modelId: string;
  serverToolNames: ReadonlySet<string>;
  /**
   * Server tools that need a person's approval before they run (Mastra's `requireApproval`), by
   * name. Not executed by the engine: a run offers them without `execute` (as client tools), so the
   * model's step ends at their call and the run asks (an AG-UI interrupt); once approved, the run
   * that resumes executes them.
   */
  approvalTools: ReadonlyMap<string, AnyTool>;
  /** Its MCP servers (AGENTS_CONFIG), as they are now. */
  mcpServers: () => McpServerView[];
  /** The model's context window in tokens: AGENTS_CONFIG, else the definition, else MODEL_CONTEXT_TOKENS. */
  contextTokens: number;
  /** The instructions the agent runs with (an override's, else the definition's). */
  instructions: string;
  /**
   * The agent has a Mastra `Memory` of its own (an agent of MASTRA_ENTRY): the model's history is
   * what that memory recalls for the thread, and a run hands the agent only the messages new to it.
   */
  ownMemory: boolean;
  /** Its Memory names threads itself (`generateTitle`): a run leaves the thread untitled for it. */
  titlesThreads: boolean;
  /** How many of a thread's messages its Memory recalls (`lastMessages`), when that does not depend on the request. */
  recalls?: number | false;
  /** Its Mastra `Memory`, when it has one that does not depend on the request (the thread store checks it reads io-bridge's threads). */
  memory?: ProjectMemory;
};

/**
 * A provider model without its API key would start and then fail every run: refused at start-up,
 * naming the key. With OPENAI_BASE_URL the model is served by an OpenAI-compatible server instead.
 */
function requireApiKey(modelId: string, variable: string, model: AppConfig['model']): void {
  if (modelId === 'scripted' || model.openaiBaseUrl) return;
  const { provider } = parseModelString(modelId);
  const keys = provider ? getProviderConfig(provider)?.apiKeyEnvVar : undefined;
  if (!keys) return;
  const names = [keys].flat();
  if (names.some((name) => process.env[name])) return;
  throw ConfigError.invalid([
    `${variable}: ${modelId} needs ${names.join(' or ')} (or OPENAI_BASE_URL for an OpenAI-compatible server)`,
  ]);
}

/** Where an agent's model was set, as a start-up error names it. */
function modelSource(id: string, entry: AgentEntry | undefined, config: AppConfig): string {
  if (config.agentEnv[envKey(id, 'MODEL')]) return envKey(id, 'MODEL');
  if (entry?.model) return `AGENTS_CONFIG ${config.agentsConfigPath}: agent '${id}', field 'model'`;
  return 'MODEL';
}

/**
 * An agent's definition with the agents file's entry over it: a built-in agent's changed fields, or
 * a whole agent of the file (`base` absent).
 */
export function definitionOf(id: string, entry: AgentEntry, base?: AgentDefinition): AgentDefinition {
  const byId = new Map<string, AnyTool>(builtInServerTools.map((tool) => [tool.id, tool] as const));
  const defaults = {
    ...base?.defaults,
    ...(entry.maxSteps !== undefined ? { maxSteps: entry.maxSteps } : {}),
    ...(entry.memory?.lastMessages !== undefined ? { lastMessages: entry.memory.lastMessages } : {}),
  };
  const description = entry.description ?? base?.description;
  const model = entry.model ?? base?.model;
  const contextTokens = entry.contextTokens ?? base?.contextTokens;
  return {
    id,
    name: entry.name ?? base?.name ?? id,
    ...(description !== undefined ? { description } : {}),
    instructions: entry.instructions ?? base?.instructions ?? '',
    ...(model !== undefined ? { model } : {}),
    tools: entry.tools ? entry.tools.map((tool) => byId.get(tool)!) : (base?.tools ?? []),
    ...(Object.keys(defaults).length ? { defaults } : {}),
    ...(contextTokens !== undefined ? { contextTokens } : {}),
  };
}

/**
 * An agent io-bridge builds (a built-in one, or one of the agents file) as Mastra's `Agent`: its
 * model through io-bridge's provider calls, its own tools and those of its MCP servers, read
 * afresh for each run (docs/agents.md#agents-in-configuration).
 */
export function definedAgent(
  definition: AgentDefinition,
  entry: AgentEntry | undefined,
  servers: readonly McpServer[],
  config: AppConfig,
  metrics: Metrics | undefined,
): RegisteredAgent {
  const modelId = definition.model ?? config.model.id;
  const variable = modelSource(definition.id, entry, config);
  const problem = modelProblem(modelId, config.model);
  if (problem) throw ConfigError.invalid([`${variable}: ${problem}`]);
  requireApiKey(modelId, variable, config.model);
  const tools = new AgentTools(definition.tools ?? [], servers, config.tools);
  const agent = new Agent({
    id: definition.id,
    name: definition.name,
    description: definition.description,
    instructions: definition.instructions,
    model: abortableModel(
      resolveModel(modelId, config.model),
      callSettings(definition.id, modelId, config, metrics),
    ),
    tools: () => tools.current().runnable,
  });
  // Mastra's own console logger would print provider errors with stacks beside our JSON logs;
  // the run reports them (RUN_ERROR, the runs table, a warn line with the run's fields). As a
  // primitive, the silent logger also reaches the LLM wrapper Mastra builds for every call.
  agent.__registerPrimitives({ logger: noopLogger });
  return withTools(
    {
      definition,
      agent,
      withoutMemory: agent,
      modelId,
      mcpServers: () => servers.map((server) => server.view()),
      contextTokens: definition.contextTokens ?? config.model.contextTokens,
      instructions: definition.instructions,
      ownMemory: false,
      titlesThreads: false,
    },
    () => tools.current(),
  );
}

/** `agent` with its tools read from `snapshot` whenever they are asked for. */
function withTools(
  agent: Omit<RegisteredAgent, 'serverToolNames' | 'approvalTools'>,
  snapshot: () => ToolSnapshot,
): RegisteredAgent {
  const definition = agent.definition;
  return {
    ...agent,
    definition: {
      ...definition,
      get tools() {
        return [...snapshot().listed];
      },
    },
    get serverToolNames() {
      return snapshot().names;
    },
    get approvalTools() {
      return snapshot().approval;
    },
  };
}

/** The provider-call settings of an agent's model (retries, timeouts, metrics: model-calls.ts). */
function callSettings(agentId: string, modelId: string, config: AppConfig, metrics: Metrics | undefined) {
  return {
    agentId,
    modelId,
    retries: config.model.retries,
    backoffMs: config.model.backoffMs,
    firstTokenTimeoutMs: config.model.firstTokenTimeoutMs,
    idleTimeoutMs: config.model.idleTimeoutMs,
    metrics,
  };
}

/** What a model config is called in logs, metrics and `GET /agents`. */
function modelIdOf(model: ModelConfig): string {
  if (typeof model === 'string') return model;
  if (typeof model === 'function') return 'dynamic';
  const { provider, modelId } = model as { provider?: string; modelId?: string };
  if (modelId) return provider ? `${provider.split('.')[0]}/${modelId}` : modelId;
  return 'unknown';
}

/**
 * An agent of the team's Mastra project, served as they wrote it: its instructions, tools, memory
 * and processors are the agent's own. io-bridge works on a fork (Mastra's own lightweight copy; the
 * team's instance is left as it is) whose model makes io-bridge's provider calls (abort, retries that
 * honour Retry-After, first-token and idle timeouts, usage) around the agent's model, whatever its
 * form, and whose tools report their results as soon as they return. Tools marked `requireApproval`
 * are asked for as the built-in agents' are (docs/clients.md#approvals-interrupts-both-protocols).
 */
export function projectAgent(
  { agent, tools, instructions: instructionsOf, memory }: MastraProject['agents'][number],
  config: AppConfig,
  metrics: Metrics | undefined,
): RegisteredAgent {
  const threadConfig = memory?.getMergedThreadConfig?.();
  const titlesThreads = Boolean(threadConfig?.generateTitle);
  const models = Array.isArray(agent.model) ? agent.model : [{ model: agent.model }];
  const modelId = models.map((m) => modelIdOf(m.model)).join(', ');
  // A model-router id of the project is Mastra's own: OPENAI_BASE_URL is the built-in agents'.
  const router = { ...config.model, openaiBaseUrl: undefined };
  for (const { model } of models) {
    if (typeof model !== 'string') continue;
    const problem = modelProblem(model, router);
    if (problem) throw ConfigError.invalid([`MASTRA_ENTRY: agent '${agent.id}': ${problem}`]);
    requireApiKey(model, `MASTRA_ENTRY: agent '${agent.id}'`, router);
  }
  const wrap = (model: ModelConfig) =>
    abortableModel(model, callSettings(agent.id, modelIdOf(model), config, metrics));
  // Named as the agent registers them (the model calls a tool by its key, not its id).
  const listed = Object.entries(tools ?? {}).map(([name, tool]) => named(tool, name));
  const approvalTools = new Map(listed.filter(requiresApproval).map((tool) => [tool.id, tool] as const));
  const reporting = new WeakMap<AnyTool, AnyTool>();
  /** A fork of the team's agent (their instance is left as it is) with io-bridge's model calls and tools. */
  const forked = () => {
    const fork = agent.__fork();
    fork.__updateModel({
      model: Array.isArray(agent.model)
        ? agent.model.map((entry) => ({ ...entry, model: wrap(entry.model) }))
        : wrap(agent.model),
    });
    fork.__setTools(async ({ requestContext }: { requestContext: RequestContext }) =>
      Object.fromEntries(
        Object.entries(await agent.listTools({ requestContext }))
          .filter(([name, tool]) => !requiresApproval(tool) && !approvalTools.has(name))
          .map(([name, tool]) => {
            if (typeof tool.execute !== 'function') return [name, tool];
            let wrapped = reporting.get(tool);
            if (!wrapped) reporting.set(tool, (wrapped = reportingTool(tool, config.tools, name)));
            return [name, wrapped];
          }),
      ),
    );
    return fork;
  };
  const fork = forked();
  // io-bridge stores the thread's messages (its claim and end): the memory recalls them, saves none.
  if (agent.hasOwnMemory()) {
    fork.__setMemory(
      memory
        ? savingNothing(memory)
        : async ({ requestContext }: { requestContext: RequestContext }) =>
            savingNothing((await agent.getMemory({ requestContext }))!),
    );
  }
  // A stateless run reaches no memory: Mastra makes a thread of every run it is given one for.
  const withoutMemory = agent.hasOwnMemory() ? forked() : fork;
  if (withoutMemory !== fork) withoutMemory.__setMemory(undefined);
  const instructions = typeof instructionsOf === 'string' ? instructionsOf : '';
  return {
    definition: {
      id: agent.id,
      name: agent.name,
      ...(agent.getDescription() ? { description: agent.getDescription() } : {}),
      instructions,
      tools: listed,
    },
    agent: fork as unknown as Agent,
    withoutMemory: withoutMemory as unknown as Agent,
    modelId,
    serverToolNames: new Set(listed.map((tool) => tool.id)),
    approvalTools,
    mcpServers: () => [],
    contextTokens: config.model.contextTokens,
    instructions,
    ownMemory: agent.hasOwnMemory(),
    titlesThreads,
    ...(threadConfig?.lastMessages !== undefined ? { recalls: threadConfig.lastMessages } : {}),
    ...(memory ? { memory } : {}),
  };
}

/** The memories made to save nothing, by the memory they wrap (one each, however many runs). */
const quietMemories = new WeakMap<ProjectMemory, ProjectMemory>();

/**
 * `memory` without the processor that saves a run's messages (Mastra's `message-history` output
 * processor): io-bridge stores them in the same rows, under ids its clients know
 * (docs/protocol.md#where-threads-live). Recall, working memory and titles work as they do in Mastra.
 */
function savingNothing(memory: ProjectMemory): ProjectMemory {
  let quiet = quietMemories.get(memory);
  if (quiet) return quiet;
  quiet = new Proxy(memory, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property !== 'getOutputProcessors') return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        const processors = (await (value as (...a: unknown[]) => Promise<Array<{ id?: string }>>).apply(
          target,
          args,
        )) as Array<{ id?: string }>;
        return processors.filter((processor) => processor.id !== MESSAGE_HISTORY);
      };
    },
  });
  quietMemories.set(memory, quiet);
  return quiet;
}

/** The id of Mastra's processor that saves a run's input and answer to the memory's storage. */
const MESSAGE_HISTORY = 'message-history';

/** `tool` under `name` (a shallow copy: the team's tool object is left as it is). */
function named(tool: AnyTool, name: string): AnyTool {
  return tool.id === name
    ? tool
    : Object.assign(Object.create(Object.getPrototypeOf(tool) as object) as AnyTool, tool, { id: name });
}
