import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Agent } from '@mastra/core/agent';
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
import { abortableModel } from './abortable-model';
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
};

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

/** The registry of Mastra agents, built once at start-up so a run does no per-agent set-up work. */
@Injectable()
export class AgentsService {
  private readonly log = new Logger(AgentsService.name);
  private readonly agents = new Map<string, RegisteredAgent>();
  readonly defaultAgentId: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig, @Optional() metrics?: Metrics) {
    const overrides = loadOverrides(
      agentDefinitions.map((d) => d.id),
      config.agentsConfigPath,
      config.agentEnv,
    );
    for (const definition of agentDefinitions) {
      if (this.agents.has(definition.id)) throw new Error(`Duplicate agent id '${definition.id}'`);
      const override = overrides.get(definition.id);
      const modelId = override?.model ?? definition.model ?? config.model.id;
      const variable = override?.model ? envKey(definition.id, 'MODEL') : 'MODEL';
      const problem = modelProblem(modelId, config.model);
      if (problem) throw ConfigError.invalid([`${variable}: ${problem}`]);
      requireApiKey(modelId, variable, config.model);
      const agent = new Agent({
        id: definition.id,
        name: definition.name,
        description: definition.description,
        instructions: override?.instructions ?? definition.instructions,
        model: abortableModel(resolveModel(modelId, config.model), {
          agentId: definition.id,
          modelId,
          retries: config.model.retries,
          backoffMs: config.model.backoffMs,
          firstTokenTimeoutMs: config.model.firstTokenTimeoutMs,
          idleTimeoutMs: config.model.idleTimeoutMs,
          metrics,
        }),
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
      const serverToolNames = new Set((definition.tools ?? []).map((tool) => tool.id));
      const approvalTools = new Map(
        (definition.tools ?? []).filter(requiresApproval).map((tool) => [tool.id, tool] as const),
      );
      this.agents.set(definition.id, {
        definition,
        agent,
        modelId,
        serverToolNames,
        approvalTools,
        contextTokens: override?.contextTokens ?? definition.contextTokens ?? config.model.contextTokens,
        instructions: override?.instructions ?? definition.instructions,
      });
    }
    if (!this.agents.has(config.defaultAgentId)) {
      throw ConfigError.invalid([
        `DEFAULT_AGENT_ID: '${config.defaultAgentId}' is not a known agent (known: ${[...this.agents.keys()].join(', ')})`,
      ]);
    }
    this.defaultAgentId = config.defaultAgentId;
    this.log.log(
      `agents: ${[...this.agents.values()].map((a) => `${a.definition.id} (${a.modelId})`).join(', ')}`,
    );
  }

  get(agentId: string = this.defaultAgentId): RegisteredAgent {
    const found = this.agents.get(agentId);
    if (!found) throw new DomainError('NOT_FOUND', `Agent '${agentId}' not found`);
    return found;
  }

  list(): RegisteredAgent[] {
    return [...this.agents.values()];
  }

  /** The Agent shape of CONTRACT section 1. */
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
