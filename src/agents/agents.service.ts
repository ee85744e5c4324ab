import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { unwatchFile, watchFile } from 'node:fs';
import type { AppConfig } from '../config/config';
import { ConfigError } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../common/errors';
import { AgentView } from './dto/agent-view.dto';
import { AgentsConfig, loadAgentsConfig, McpServerEntry } from './agents-config';
import { definedAgent, definitionOf, projectAgent, RegisteredAgent } from './agent-builders';
import { requiresApproval } from './agent-tools';
import type { AgentDefinition } from './agent-definition';
import { builtInServerTools } from '../mastra/tools/server-tools';
import { MastraProject } from './mastra-project';
import { McpServer } from './mcp/mcp-server';
import { Metrics } from '../ops/metrics.service';

export type { RegisteredAgent } from './agent-builders';
export { requiresApproval } from './agent-tools';

/** The Nest token of the team's Mastra project (`MASTRA_ENTRY`), or null for the built-in agents. */
export const MASTRA_PROJECT = Symbol('MASTRA_PROJECT');

/** The Nest token of the built-in agents' definitions (built-in-agents.ts). */
export const BUILT_IN_AGENTS = Symbol('BUILT_IN_AGENTS');

/** The agents served now, with the agents file and the MCP servers they were built from. */
type Registry = {
  agents: Map<string, RegisteredAgent>;
  /** A project agent's id by the key its Mastra instance registered it under, where the two differ. */
  aliases: Map<string, string>;
  file: AgentsConfig;
  servers: Map<string, McpServer>;
};

/**
 * The registry of Mastra agents, built at start-up so a run does no per-agent set-up work: the
 * agents of the team's Mastra project when `MASTRA_ENTRY` names one, else the built-in agents; and
 * the agents of the agents file (`AGENTS_CONFIG`), with their MCP servers. A changed file is read
 * again: new runs get the new agents, a running run keeps the agent it started with, and a file
 * that doesn't validate is refused with a log line, the agents staying as they were
 * (docs/agents.md#agents-in-configuration).
 */
@Injectable()
export class AgentsService implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger(AgentsService.name);
  private registry: Registry;
  private reloading = Promise.resolve();
  readonly defaultAgentId: string;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
    @Optional() @Inject(MASTRA_PROJECT) private readonly project?: MastraProject | null,
    @Optional() @Inject(BUILT_IN_AGENTS) private readonly builtIn: readonly AgentDefinition[] = [],
  ) {
    this.registry = this.build(this.read(), new Map());
    const fallback = project ? project.agents[0].agent.id : 'assistant';
    this.defaultAgentId = config.defaultAgentId ?? fallback;
    if (!this.registry.agents.has(this.defaultAgentId)) {
      throw ConfigError.invalid([
        `DEFAULT_AGENT_ID: '${this.defaultAgentId}' is not a known agent (known: ${[...this.registry.agents.keys()].join(', ')})`,
      ]);
    }
    this.log.log(
      `agents${project ? ` of ${project.entry} (@mastra/core ${project.mastraVersion ?? 'unknown'})` : ''}: ${this.list()
        .map((a) => `${a.definition.id} (${a.modelId})`)
        .join(', ')}`,
    );
  }

  /** The MCP servers connect (each waited for MCP_CONNECT_WAIT_MS at most); the file is watched. */
  async onModuleInit(): Promise<void> {
    await this.startServers([...this.registry.servers.values()]);
    const path = this.config.agentsConfigPath;
    if (path && this.config.agentsConfigPollMs > 0) {
      watchFile(path, { interval: this.config.agentsConfigPollMs, persistent: false }, () => {
        this.reloading = this.reloading.then(() => this.reload());
      });
    }
  }

  /**
   * The MCP servers are closed and the team's Mastra instance is shut down with the service, before
   * its database is (the embedded one).
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.config.agentsConfigPath) unwatchFile(this.config.agentsConfigPath);
    await this.reloading;
    await Promise.all([...this.registry.servers.values()].map((server) => server.close()));
    await this.project?.shutdown?.().catch((err: unknown) => {
      this.log.warn(`MASTRA_ENTRY: the Mastra instance's shutdown failed: ${String(err)}`);
    });
  }

  /**
   * Reads the agents file again; a file that changed and validates replaces the agents (its MCP
   * servers that did not change are kept as they are, connected), else the agents stay.
   */
  async reload(): Promise<void> {
    const before = this.registry;
    let next: Registry;
    try {
      const file = this.read();
      if (file.digest === before.file.digest) return;
      next = this.build(file, before.servers);
      if (!next.agents.has(this.defaultAgentId)) {
        throw ConfigError.invalid([`DEFAULT_AGENT_ID: '${this.defaultAgentId}' is no longer an agent`]);
      }
    } catch (err) {
      this.log.error(
        `AGENTS_CONFIG: the change is refused, the agents stay as they were: ${(err as Error).message}`,
      );
      return;
    }
    await this.startServers(
      [...next.servers.values()].filter((server) => before.servers.get(server.name) !== server),
    );
    this.registry = next;
    for (const [name, server] of before.servers) {
      if (next.servers.get(name) !== server) server.retire();
    }
    this.log.log(`AGENTS_CONFIG: reloaded; agents: ${[...next.agents.keys()].join(', ')}`);
  }

  private read(): AgentsConfig {
    const builtIn = this.project ? [] : this.builtIn.map((d) => d.id);
    return loadAgentsConfig(
      { agents: builtIn, tools: builtInServerTools.map((tool) => tool.id) },
      this.config.agentsConfigPath,
      this.config.agentEnv,
      process.env,
    );
  }

  /** The agents of `file` (and of the project), reusing the servers of `kept` whose entry is the same. */
  private build(file: AgentsConfig, kept: ReadonlyMap<string, McpServer>): Registry {
    const servers = new Map<string, McpServer>();
    for (const [name, entry] of file.mcpServers) {
      const old = kept.get(name);
      servers.set(name, old && sameEntry(old.entry, entry) ? old : this.server(name, entry));
    }
    const agents = new Map<string, RegisteredAgent>();
    const aliases = new Map<string, string>();
    const defined = new Map(this.builtIn.map((d) => [d.id, d] as const));
    if (this.project) {
      for (const loaded of this.project.agents) {
        const agent = projectAgent(loaded, this.config, this.metrics);
        agents.set(agent.definition.id, agent);
        if (loaded.key !== loaded.agent.id) aliases.set(loaded.key, loaded.agent.id);
      }
    } else {
      for (const definition of this.builtIn) {
        if (!file.agents.has(definition.id)) {
          agents.set(definition.id, definedAgent(definition, undefined, [], this.config, this.metrics));
        }
      }
    }
    for (const [id, entry] of file.agents) {
      if (agents.has(id)) {
        throw ConfigError.invalid([
          `AGENTS_CONFIG ${this.config.agentsConfigPath}: agent '${id}' is an agent of MASTRA_ENTRY: change it in the project`,
        ]);
      }
      const own = (entry.mcpServers ?? []).map((name) => servers.get(name)!);
      agents.set(
        id,
        definedAgent(definitionOf(id, entry, defined.get(id)), entry, own, this.config, this.metrics),
      );
    }
    return { agents, aliases, file, servers };
  }

  private server(name: string, entry: McpServerEntry): McpServer {
    return new McpServer(name, entry, {
      toolTimeoutMs: this.config.tools.timeoutMs,
      log: this.log,
      metrics: this.metrics,
    });
  }

  private async startServers(servers: McpServer[]): Promise<void> {
    await Promise.all(servers.map((server) => server.start(this.config.mcpConnectWaitMs)));
  }

  get(agentId: string = this.defaultAgentId): RegisteredAgent {
    const { agents, aliases } = this.registry;
    const found = agents.get(agentId) ?? agents.get(aliases.get(agentId) ?? '');
    if (!found) throw new DomainError('NOT_FOUND', `Agent '${agentId}' not found`);
    return found;
  }

  list(): RegisteredAgent[] {
    return [...this.registry.agents.values()];
  }

  /** The Agent shape of docs/protocol.md#routes. */
  view(agentId: string): AgentView {
    const { definition, modelId, mcpServers } = this.get(agentId);
    const servers = mcpServers();
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
      ...(servers.length ? { mcpServers: servers } : {}),
      capabilities: { frontendTools: true, structuredOutput: true, memory: true },
    };
  }
}

/** Two entries of a server that connect alike (the file's text may differ elsewhere). */
function sameEntry(a: McpServerEntry, b: McpServerEntry): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
