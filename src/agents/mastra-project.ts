import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { satisfies } from 'semver';
import type { RequestContext } from '@mastra/core/request-context';
import type { Tool } from '@mastra/core/tools';
import { ConfigError } from '../config/config';
import type { ModelConfig } from './abortable-model';

type AnyTool = Tool<any, any, any, any, any, any, any>;

/**
 * A Mastra `Agent` as io-bridge uses one, by its shape: a team's project may bring its own installed
 * copy of `@mastra/core`, where `instanceof Agent` is false (docs/agents.md#your-own-mastra-project).
 */
export type ProjectAgent = {
  id: string;
  name: string;
  getDescription(): string;
  /** What the agent was given as its model: a model, a model-router id, a function of the request context, or fallbacks. */
  model: ModelConfig | Array<{ model: ModelConfig }>;
  getInstructions(args?: { requestContext?: RequestContext }): unknown;
  listTools(args?: { requestContext?: RequestContext }): Promise<Record<string, AnyTool>>;
  stream(messages: unknown, options?: unknown): Promise<unknown>;
  /** Whether the agent was given a Mastra `Memory`. */
  hasOwnMemory(): boolean;
  getMemory(args?: { requestContext?: RequestContext }): Promise<ProjectMemory | undefined>;
  __setMemory(memory: unknown): void;
  /** A copy of the agent that can be changed without changing the team's instance (Mastra's own editor uses it). */
  __fork(): ProjectAgent;
  __updateModel(args: { model: unknown }): void;
  __setTools(tools: unknown): void;
};

/** A Mastra `Memory`, as io-bridge uses one. */
export type ProjectMemory = {
  getMergedThreadConfig?(): { generateTitle?: unknown; lastMessages?: number | false };
  getThreadById?(args: { threadId: string }): Promise<unknown>;
};

/** One agent of a team's Mastra instance, as loaded. */
export type LoadedAgent = {
  /** The key the instance registered it under (`new Mastra({ agents: { key } })`). */
  key: string;
  agent: ProjectAgent;
  /** Its tools as listed at start-up (without a caller), or undefined when they need one. */
  tools?: Record<string, AnyTool>;
  /** Its instructions as given at start-up: a string, or what a function of the request context returned without one. */
  instructions?: unknown;
  /** Its Memory, when it has one that is not a function of the request context. */
  memory?: ProjectMemory;
};

/** The agents of a team's Mastra instance, and the `@mastra/core` version it resolves. */
export type MastraProject = {
  entry: string;
  mastraVersion?: string;
  agents: LoadedAgent[];
  /** Mastra's own shutdown of the instance (its storage's connections among what it releases). */
  shutdown?: () => Promise<void>;
};

const AGENT_METHODS = [
  'getDescription',
  'getInstructions',
  'listTools',
  'stream',
  'hasOwnMemory',
  'getMemory',
  '__setMemory',
  '__fork',
  '__updateModel',
  '__setTools',
] as const;

/** Why `value` is not an agent io-bridge can serve, or undefined. */
export function agentProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'is not an object';
  const agent = value as Record<string, unknown>;
  if (typeof agent.id !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(agent.id)) {
    return 'has no id of 1 to 64 letters, digits, - or _';
  }
  const missing = AGENT_METHODS.filter((method) => typeof agent[method] !== 'function');
  if (missing.length) {
    return `lacks ${missing.join(', ')}: not a Mastra Agent of a supported @mastra/core (${SUPPORTED_MASTRA}, see docs/agents.md)`;
  }
  if (agent.model === undefined) return 'has no model';
  return undefined;
}

/** The one line start-up stops with: `source` names where the instance came from. */
const problem = (source: string, reason: string) => ConfigError.invalid([`${source} ${reason}`]);

/**
 * The versions of `@mastra/core` io-bridge serves: its peer dependency in package.json
 * (docs/agents.md#your-own-mastra-project).
 */
export const SUPPORTED_MASTRA = '^1.71.0';

/** Stops start-up when `version` (the `@mastra/core` a project resolves) is not one io-bridge serves. */
function checkMastraVersion(source: string, version: string | undefined): void {
  if (version && !satisfies(version, SUPPORTED_MASTRA, { includePrerelease: true }))
    throw problem(source, `uses @mastra/core ${version}; io-bridge serves @mastra/core ${SUPPORTED_MASTRA}`);
}

/** The version of the `@mastra/core` a module at `path` imports, or undefined when it resolves none. */
function mastraVersionFor(path: string): string | undefined {
  let main: string;
  try {
    main = createRequire(path).resolve('@mastra/core');
  } catch {
    return undefined;
  }
  for (let dir = dirname(main); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name?: string;
      version?: string;
    };
    if (name === '@mastra/core') return version;
  }
  return undefined;
}

/**
 * Loads the module `MASTRA_ENTRY` names, JavaScript or TypeScript as Mastra projects write it
 * (extensionless relative imports, which Node's type stripping alone cannot load: tsx loads it), and
 * returns its `mastra` export's agents. `DATABASE_URL`, when unset, is set to io-bridge's database
 * first (the embedded one by default), so a project whose storage reads it needs nothing more. A
 * module io-bridge cannot use, or one on a `@mastra/core` io-bridge does not serve, stops start-up
 * with one line naming MASTRA_ENTRY and the reason.
 */
export async function loadMastraProject(entry: string, databaseUrl?: string): Promise<MastraProject> {
  const source = `MASTRA_ENTRY: ${entry}`;
  const path = resolve(entry);
  // A project's storage on DATABASE_URL finds io-bridge's database, the embedded one included.
  if (databaseUrl && !process.env.DATABASE_URL) process.env.DATABASE_URL = databaseUrl;
  if (!existsSync(path)) throw problem(source, `does not exist (${path})`);
  const version = mastraVersionFor(path);
  checkMastraVersion(source, version);
  let exported: Record<string, unknown>;
  try {
    const { tsImport } = await import('tsx/esm/api');
    exported = (await tsImport(pathToFileURL(path).href, __filename)) as Record<string, unknown>;
  } catch (err) {
    const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw problem(source, `could not be loaded: ${reason}`);
  }
  const mastra = exported.mastra ?? (exported.default as Record<string, unknown> | undefined)?.mastra;
  if (typeof (mastra as MastraInstance | undefined)?.listAgents !== 'function') {
    throw problem(
      source,
      'exports no `mastra` (a Mastra instance: `export const mastra = new Mastra({ agents })`)',
    );
  }
  return mastraProjectOf(mastra as MastraInstance, entry, version, source);
}

/** The Mastra instance a host Nest app gave (`IoBridgeModule.forRoot({ mastra })`), with the `@mastra/core` its app resolves. */
export async function hostProjectOf(mastra: MastraInstance): Promise<MastraProject> {
  const source = 'IoBridgeModule.forRoot({ mastra })';
  const version = mastraVersionFor(join(process.cwd(), 'package.json'));
  checkMastraVersion(source, version);
  return mastraProjectOf(mastra, source, version, source);
}

/** A Mastra instance as io-bridge uses one, by its shape. */
export type MastraInstance = {
  listAgents(): Record<string, unknown>;
  shutdown?: (options?: { drainTimeout?: number }) => Promise<void>;
};

/**
 * The agents of a Mastra instance, checked and listed: the instance a MASTRA_ENTRY module exports, or
 * the one a host Nest app gives `IoBridgeModule.forRoot({ mastra })`. `entry` names where it came from,
 * and `source` begins the one line a refusal is.
 */
export async function mastraProjectOf(
  mastra: MastraInstance,
  entry: string,
  version?: string,
  source = entry,
): Promise<MastraProject> {
  if (typeof mastra?.listAgents !== 'function') throw problem(source, 'is not a Mastra instance');
  const agents = Object.entries(mastra.listAgents() ?? {});
  if (!agents.length) throw problem(source, 'has a Mastra instance with no agents');
  const seen = new Set<string>();
  const loaded: LoadedAgent[] = [];
  for (const [key, value] of agents) {
    const why = agentProblem(value);
    if (why) throw problem(source, `agent '${key}' ${why}`);
    const agent = value as ProjectAgent;
    if (seen.has(agent.id)) throw problem(source, `has two agents with the id '${agent.id}'`);
    seen.add(agent.id);
    // Tools or instructions that are functions of the request context may need a caller's values.
    const tools = await agent.listTools().catch(() => undefined);
    const instructions: unknown = await Promise.resolve()
      .then(() => agent.getInstructions())
      .catch(() => undefined);
    const memory = agent.hasOwnMemory() ? await agent.getMemory().catch(() => undefined) : undefined;
    loaded.push({ key, agent, tools, instructions, ...(memory ? { memory } : {}) });
  }
  const shutdown = mastra.shutdown?.bind(mastra);
  return {
    entry,
    ...(version ? { mastraVersion: version } : {}),
    agents: loaded,
    // io-bridge's own runs are drained before (graceful-shutdown.ts): nothing of Mastra's is left to wait for.
    ...(shutdown ? { shutdown: () => shutdown({ drainTimeout: 0 }) } : {}),
  };
}
