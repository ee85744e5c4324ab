import type { Agent } from '@mastra/core/agent';
import { ConfigError } from '../config/config';
import { mastra } from '../mastra';
import { AgentDefinition, ModelSettings } from './agent-definition';
import { LoadedAgent, MastraInstance, mastraProjectOf } from './mastra-project';

/** The model settings a definition takes from an agent's `defaultOptions.modelSettings`. */
const SETTINGS = ['maxOutputTokens', 'temperature', 'topP', 'topK', 'maxRetries'] as const;

/**
 * The built-in agents, the Mastra project of `src/mastra`, as the definitions io-bridge builds its
 * agents from, so that an operator's settings apply to them as to every agent it builds: `MODEL`
 * (their model in the code is the scripted one, `MODEL`'s default), `AGENT_<ID>_*` and the agents
 * file (docs/agents.md#built-in-agents). Each agent's id, name, description, instructions, tools
 * and default `maxSteps` and model settings are taken as the code has them, the instance read and
 * checked as a team's is (mastraProjectOf).
 */
export async function builtInDefinitions(project: MastraInstance = mastra): Promise<AgentDefinition[]> {
  const { agents } = await mastraProjectOf(project, 'src/mastra');
  return Promise.all(agents.map(definitionOfLoaded));
}

/** One agent of the project, as mastraProjectOf listed it, as a definition. */
async function definitionOfLoaded(loaded: LoadedAgent): Promise<AgentDefinition> {
  const { instructions } = loaded;
  const agent = loaded.agent as unknown as Agent;
  if (typeof instructions !== 'string') {
    throw ConfigError.invalid([
      `src/mastra: agent '${agent.id}': a built-in agent's instructions are a string`,
    ]);
  }
  if (!loaded.tools) {
    throw ConfigError.invalid([
      `src/mastra: agent '${agent.id}': a built-in agent's tools are listed without a request context`,
    ]);
  }
  // Tools built with createTool, each listed under its id (the name the model calls it by).
  const tools = Object.entries(loaded.tools).map(([name, tool]) => {
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
