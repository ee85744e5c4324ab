import { Inject, Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { Agent } from '@mastra/core/agent';
import type { RequestContext } from '@mastra/core/request-context';
import type { Tool } from '@mastra/core/tools';
import { noopLogger } from '@mastra/core/logger';
import { getProviderConfig, parseModelString } from '@mastra/core/llm';
import type { AppConfig } from '../config/config';
import { ConfigError } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../common/errors';
import { AgentDefinition } from './agent-definition';
import { AgentView } from './dto/agent-view.dto';
import { envKey, loadOverrides } from './agent-overrides';
import { agentDefinitions } from './index';
import { reportingTool } from './tools/run-tools';
import { modelProblem, resolveModel } from './model-factory';
import { abortableModel, ModelConfig } from './abortable-model';
import { MastraProject, ProjectMemory } from './mastra-project';
import { Metrics } from '../ops/metrics.service';

type AnyTool = Tool<any, any, any, any, any, any, any>;

export type RegisteredAgent = {
  definition: AgentDefinition;
  agent: Agent;
  modelId: string;
  serverToolNames: ReadonlySet<string>;
  /**
   * Server tools that need a person's approval before they run (Mastra's `requireApproval`), by
   * name. Not executed by the engine: a run offers them without `execute` (as client tools), so the
   * model's step ends at their call and the run asks (an AG-UI interrupt); once approved, the run
   * that resumes executes them.
   */
  approvalTools: ReadonlyMap<string, AnyTool>;
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
};

/** Told of a title an agent's own Memory gave a thread (ThreadsService keeps it as the thread's). */
export type TitleListener = (threadId: string, resourceId: string, title: string) => void;

/** Whether a tool is marked with Mastra's `requireApproval` (a flag; an approval function counts as always). */
export function requiresApproval(tool: AnyTool): boolean {
  return Boolean((tool as { requireApproval?: unknown }).requireApproval);
}

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

/** A built-in agent (src/agents/index.ts) as Mastra's `Agent`, with its AGENTS_CONFIG / AGENT_<ID>_* override. */
function builtInAgent(
  definition: AgentDefinition,
  override: ReturnType<typeof loadOverrides> extends Map<string, infer O> ? O | undefined : never,
  config: AppConfig,
  metrics: Metrics | undefined,
): RegisteredAgent {
  const modelId = override?.model ?? definition.model ?? config.model.id;
  const variable = override?.model ? envKey(definition.id, 'MODEL') : 'MODEL';
  const problem = modelProblem(modelId, config.model);
  if (problem) throw ConfigError.invalid([`${variable}: ${problem}`]);
  requireApiKey(modelId, variable, config.model);
  const instructions = override?.instructions ?? definition.instructions;
  const agent = new Agent({
    id: definition.id,
    name: definition.name,
    description: definition.description,
    instructions,
    model: abortableModel(
      resolveModel(modelId, config.model),
      callSettings(definition.id, modelId, config, metrics),
    ),
    tools: Object.fromEntries(
      (definition.tools ?? [])
        .filter((t) => !requiresApproval(t))
        .map((tool) => [tool.id, reportingTool(tool)]),
    ),
  });
  // Mastra's own console logger would print provider errors with stacks beside our JSON logs;
  // the run reports them (RUN_ERROR, the runs table, a warn line with the run's fields). As a
  // primitive, the silent logger also reaches the LLM wrapper Mastra builds for every call.
  agent.__registerPrimitives({ logger: noopLogger });
  return {
    definition,
    agent,
    modelId,
    serverToolNames: new Set((definition.tools ?? []).map((tool) => tool.id)),
    approvalTools: new Map(
      (definition.tools ?? []).filter(requiresApproval).map((tool) => [tool.id, tool] as const),
    ),
    contextTokens: override?.contextTokens ?? definition.contextTokens ?? config.model.contextTokens,
    instructions,
    ownMemory: false,
    titlesThreads: false,
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
function projectAgent(
  { agent, tools, instructions: instructionsOf, memory }: MastraProject['agents'][number],
  config: AppConfig,
  metrics: Metrics | undefined,
  titled: TitleListener,
): RegisteredAgent {
  const fork = agent.__fork();
  const titlesThreads = Boolean(memory?.getMergedThreadConfig?.().generateTitle);
  if (memory && titlesThreads) fork.__setMemory(reportingTitles(memory, titled));
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
  fork.__updateModel({
    model: Array.isArray(agent.model)
      ? agent.model.map((entry) => ({ ...entry, model: wrap(entry.model) }))
      : wrap(agent.model),
  });
  // Named as the agent registers them (the model calls a tool by its key, not its id).
  const listed = Object.entries(tools ?? {}).map(([name, tool]) => named(tool, name));
  const approvalTools = new Map(listed.filter(requiresApproval).map((tool) => [tool.id, tool] as const));
  const reporting = new WeakMap<AnyTool, AnyTool>();
  fork.__setTools(async ({ requestContext }: { requestContext: RequestContext }) =>
    Object.fromEntries(
      Object.entries(await agent.listTools({ requestContext }))
        .filter(([name, tool]) => !requiresApproval(tool) && !approvalTools.has(name))
        .map(([name, tool]) => {
          if (typeof tool.execute !== 'function') return [name, tool];
          let wrapped = reporting.get(tool);
          if (!wrapped) reporting.set(tool, (wrapped = reportingTool(tool, name)));
          return [name, wrapped];
        }),
    ),
  );
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
    modelId,
    serverToolNames: new Set(listed.map((tool) => tool.id)),
    approvalTools,
    contextTokens: config.model.contextTokens,
    instructions,
    ownMemory: agent.hasOwnMemory(),
    titlesThreads,
  };
}

/**
 * `memory`, telling `titled` of each title it gives a thread (Mastra saves a generated title with
 * `createThread`), so that io-bridge's thread shows the same title.
 */
function reportingTitles(memory: ProjectMemory, titled: TitleListener): ProjectMemory {
  return new Proxy(memory, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property !== 'createThread') return (value as (...a: unknown[]) => unknown).bind(target);
      return async (args: Parameters<ProjectMemory['createThread']>[0]) => {
        const created = await target.createThread(args);
        if (args.title && args.threadId) titled(args.threadId, args.resourceId, args.title);
        return created;
      };
    },
  });
}

/** `tool` under `name` (a shallow copy: the team's tool object is left as it is). */
function named(tool: AnyTool, name: string): AnyTool {
  return tool.id === name
    ? tool
    : Object.assign(Object.create(Object.getPrototypeOf(tool) as object) as AnyTool, tool, { id: name });
}

/** The Nest token of the team's Mastra project (`MASTRA_ENTRY`), or null for the built-in agents. */
export const MASTRA_PROJECT = Symbol('MASTRA_PROJECT');

/**
 * The registry of Mastra agents, built once at start-up so a run does no per-agent set-up work: the
 * agents of the team's Mastra project when `MASTRA_ENTRY` names one, else the built-in agents.
 */
@Injectable()
export class AgentsService implements OnApplicationShutdown {
  private readonly log = new Logger(AgentsService.name);
  private readonly agents = new Map<string, RegisteredAgent>();
  private readonly titleListeners: TitleListener[] = [];
  /** A project agent's id by the key its Mastra instance registered it under, where the two differ. */
  private readonly aliases = new Map<string, string>();
  readonly defaultAgentId: string;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    @Optional() metrics?: Metrics,
    @Optional() @Inject(MASTRA_PROJECT) private readonly project?: MastraProject | null,
  ) {
    if (project) {
      for (const loaded of project.agents) {
        this.add(
          projectAgent(loaded, config, metrics, (...title) =>
            this.titleListeners.forEach((l) => l(...title)),
          ),
        );
        if (loaded.key !== loaded.agent.id) this.aliases.set(loaded.key, loaded.agent.id);
      }
    } else {
      const overrides = loadOverrides(
        agentDefinitions.map((d) => d.id),
        config.agentsConfigPath,
        config.agentEnv,
      );
      for (const definition of agentDefinitions) {
        if (this.agents.has(definition.id)) throw new Error(`Duplicate agent id '${definition.id}'`);
        this.add(builtInAgent(definition, overrides.get(definition.id), config, metrics));
      }
    }
    const fallback = project ? project.agents[0].agent.id : 'assistant';
    this.defaultAgentId = config.defaultAgentId ?? fallback;
    if (!this.agents.has(this.defaultAgentId)) {
      throw ConfigError.invalid([
        `DEFAULT_AGENT_ID: '${this.defaultAgentId}' is not a known agent (known: ${[...this.agents.keys()].join(', ')})`,
      ]);
    }
    this.log.log(
      `agents${project ? ` of ${project.entry} (@mastra/core ${project.mastraVersion ?? 'unknown'})` : ''}: ${[...this.agents.values()].map((a) => `${a.definition.id} (${a.modelId})`).join(', ')}`,
    );
  }

  /** Tells `listener` of every title an agent's own Memory gives a thread. */
  onTitle(listener: TitleListener): void {
    this.titleListeners.push(listener);
  }

  /** The team's Mastra instance is shut down with the service, before its database is (the embedded one). */
  async onApplicationShutdown(): Promise<void> {
    await this.project?.shutdown?.().catch((err: unknown) => {
      this.log.warn(`MASTRA_ENTRY: the Mastra instance's shutdown failed: ${String(err)}`);
    });
  }

  private add(agent: RegisteredAgent): void {
    this.agents.set(agent.definition.id, agent);
  }

  get(agentId: string = this.defaultAgentId): RegisteredAgent {
    const found = this.agents.get(agentId) ?? this.agents.get(this.aliases.get(agentId) ?? '');
    if (!found) throw new DomainError('NOT_FOUND', `Agent '${agentId}' not found`);
    return found;
  }

  list(): RegisteredAgent[] {
    return [...this.agents.values()];
  }

  /** The Agent shape of docs/protocol.md#routes. */
  view(agentId: string): AgentView {
    const { definition, modelId } = this.get(agentId);
    return {
      id: definition.id,
      name: definition.name,
      ...(definition.description ? { description: definition.description } : {}),
      modelId,
      tools: (definition.tools ?? []).map((tool) => ({
        name: tool.id,
        description: tool.description ?? '',
        ...(requiresApproval(tool) ? { requiresApproval: true } : {}),
      })),
      capabilities: { frontendTools: true, structuredOutput: true, memory: true },
    };
  }
}
