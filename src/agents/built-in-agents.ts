import type { Agent } from '@mastra/core/agent';
import type { Mastra } from '@mastra/core/mastra';
import type { Tool } from '@mastra/core/tools';
import { ConfigError } from '../config/config';
import { mastra } from '../mastra';
import { AgentDefinition, ModelSettings } from './agent-definition';

type AnyTool = Tool<any, any, any, any, any, any, any>;

/** The model settings a definition takes from an agent's `defaultOptions.modelSettings`. */
const SETTINGS = ['maxOutputTokens', 'temperature', 'topP', 'topK', 'maxRetries'] as const;

/**
 * The built-in agents, the Mastra project of `src/mastra`, as the definitions io-bridge builds its
 * agents from, so that an operator's settings apply to them as to every agent it builds: `MODEL`
 * (their model in the code is the scripted one, `MODEL`'s default), `AGENT_<ID>_*` and the agents
 * file (docs/agents.md#built-in-agents). Each agent's id, name, description, instructions, tools
 * and default `maxSteps` and model settings are taken as the code has them.
 */
export async function builtInDefinitions(
  project: Pick<Mastra, 'listAgents'> = mastra,
): Promise<AgentDefinition[]> {
  return Promise.all(Object.values(project.listAgents()).map((agent) => definitionOfAgent(agent as Agent)));
}

async function definitionOfAgent(agent: Agent): Promise<AgentDefinition> {
  const instructions = await agent.getInstructions();
  if (typeof instructions !== 'string') {
    throw ConfigError.invalid([
      `src/mastra: agent '${agent.id}': a built-in agent's instructions are a string`,
    ]);
  }
  // Tools built with createTool, each listed under its id (the name the model calls it by).
  const tools = Object.entries(await agent.listTools()).map(([name, listed]) => {
    const tool = listed as AnyTool;
    if (tool.id !== name) {
      throw ConfigError.invalid([
        `src/mastra: agent '${agent.id}': tool '${tool.id}' is listed as '${name}'`,
      ]);
    }
    return tool;
  });
  const options = await agent.getDefaultOptions();
  const given = (options.modelSettings ?? {}) as Record<string, number | undefined>;
  const modelSettings: ModelSettings = {};
  for (const key of SETTINGS) if (given[key] !== undefined) modelSettings[key] = given[key];
  const defaults = {
    ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}),
    ...(Object.keys(modelSettings).length ? { modelSettings } : {}),
  };
  const description = agent.getDescription();
  return {
    id: agent.id,
    name: agent.name,
    ...(description ? { description } : {}),
    instructions,
    tools,
    ...(Object.keys(defaults).length ? { defaults } : {}),
  };
}
