import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { safeErrorMessage } from '../common/errors';
import { ConfigError } from '../config/config';

const modelId = z.string().regex(/^(scripted|[a-z0-9-]+\/\S+)$/, "must be 'scripted' or a provider/model id");

/** A tool name, or a pattern of them where `*` stands for any characters (`write_*`). */
const toolPattern = z.string().min(1).max(128);

/**
 * An agent in the file (docs/agents.md#agents-in-configuration): a new agent needs `instructions`;
 * an entry naming a built-in agent changes only the fields it gives.
 */
const agentSchema = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  description: z.string().max(2000).optional(),
  instructions: z.string().min(1).optional(),
  model: modelId.optional(),
  /** The model's context window in tokens. */
  contextTokens: z.number().int().min(256).max(10_000_000).optional(),
  maxSteps: z.number().int().min(1).max(100).optional(),
  memory: z.strictObject({ lastMessages: z.number().int().min(0).max(1000).optional() }).optional(),
  /** Built-in server tools by id (`current_time`, `calculate`, `publish_note`). */
  tools: z.array(z.string().min(1)).max(100).optional(),
  /** MCP servers of the file's `mcpServers`, by name: the agent may use their tools. */
  mcpServers: z.array(z.string().min(1)).max(50).optional(),
});

const serverCommon = {
  /** Only these tools of the server (names or patterns); all when absent. */
  tools: z.array(toolPattern).max(500).optional(),
  /** What the model knows each tool by is this prefix and the tool's name (default `<server>_`). */
  prefix: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{0,32}$/, 'must be at most 32 letters, digits, `_` or `-`')
    .optional(),
  /** Tools a person approves before each call: all (`true`), or names and patterns. */
  requireApproval: z.union([z.boolean(), z.array(toolPattern).max(500)]).optional(),
};

const headerName = z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be an HTTP header name');
const headerValue = z
  .string()
  .max(8192)
  .regex(/^[^\r\n]*$/, 'must be one line');

const stdioSchema = z.strictObject({
  ...serverCommon,
  command: z.string().min(1),
  args: z.array(z.string()).max(100).default([]),
  /** The child's whole environment: nothing of the service's is inherited beyond it. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  cwd: z.string().min(1).optional(),
});

const httpSchema = z.strictObject({
  ...serverCommon,
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  headers: z.record(headerName, headerValue).default({}),
  /**
   * The caller's identity on every call of their run: `bearer`, their own bearer token
   * (AUTH_MODE=jwt); or a header whose value is built from the principal (`{resourceId}`,
   * `{claims.<name>}`).
   */
  forwardAuth: z
    .union([z.literal('bearer'), z.strictObject({ header: headerName, value: headerValue })])
    .optional(),
});

export type AgentEntry = z.infer<typeof agentSchema>;
export type StdioServerEntry = z.infer<typeof stdioSchema> & { transport: 'stdio' };
export type HttpServerEntry = z.infer<typeof httpSchema> & { transport: 'http' };
export type McpServerEntry = StdioServerEntry | HttpServerEntry;

/** The agents file as read: every agent it defines or changes, and its MCP servers. */
export type AgentsConfig = {
  agents: Map<string, AgentEntry>;
  mcpServers: Map<string, McpServerEntry>;
  /** A digest of the file's text: a reload of the same text changes nothing. */
  digest: string;
};

/** What the file may name besides its own: the built-in agents and server tools. */
export type KnownNames = { agents: readonly string[]; tools: readonly string[] };

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

/** `AGENT_MY_AGENT_MODEL` for agent id `my-agent`. */
export const envKey = (agentId: string, field: 'MODEL' | 'INSTRUCTIONS') =>
  `AGENT_${agentId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${field}`;

/**
 * The agents file (`AGENTS_CONFIG`, JSON or YAML, e.g. a mounted ConfigMap) with the environment's
 * `AGENT_<ID>_MODEL` / `_INSTRUCTIONS`, which win. Two shapes are read:
 * - `{ agents: {<id>: {...}}, mcpServers: {<name>: {...}} }`: whole agents and their MCP servers;
 * - `{ <id>: {model, instructions, contextTokens} }`: changes to agents that exist (the first shape's
 *   `agents` alone).
 * A bad file is refused with one line per problem, each naming the file, the agent or server, and
 * the field. `${VAR}` in a server's URL, headers, command, arguments, `cwd` or `env` is the
 * environment's VAR (it must be set): secrets stay in the environment, not in the file.
 */
export function loadAgentsConfig(
  known: KnownNames,
  path: string | undefined,
  /** `AGENT_<ID>_MODEL` / `_INSTRUCTIONS`. */
  env: Record<string, string | undefined>,
  /** What `${VAR}` reads. */
  variables: Record<string, string | undefined> = env,
): AgentsConfig {
  let text = '';
  let raw: unknown = {};
  if (path) {
    try {
      text = readFileSync(path, 'utf8');
      raw = extname(path).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
    } catch (err) {
      throw ConfigError.invalid([
        `AGENTS_CONFIG ${path}: cannot read it: ${safeErrorMessage(err, String(err))}`,
      ]);
    }
  }
  const where = `AGENTS_CONFIG ${path ?? ''}`.trim();
  const problems: string[] = [];
  const file = raw ?? {};
  if (typeof file !== 'object' || Array.isArray(file)) {
    throw ConfigError.invalid([`${where}: must be an object of agents`]);
  }
  const shaped = 'agents' in file || 'mcpServers' in file;
  const sections = shaped ? (file as Record<string, unknown>) : { agents: file };
  for (const key of Object.keys(sections)) {
    if (key !== 'agents' && key !== 'mcpServers')
      problems.push(`${where}: unknown section '${key}' (agents, mcpServers)`);
  }
  const mcpServers = new Map<string, McpServerEntry>();
  for (const [name, value] of entriesOf(sections.mcpServers, `${where}: mcpServers`, problems)) {
    const at = `${where}: MCP server '${name}'`;
    if (!SERVER_NAME.test(name)) {
      problems.push(`${at}: the name must be 1-32 letters, digits, '_' or '-'`);
      continue;
    }
    const server = serverEntry(value, at, variables, problems);
    if (server) mcpServers.set(name, server);
  }
  const agents = new Map<string, AgentEntry>();
  for (const [id, value] of entriesOf(sections.agents, `${where}: agents`, problems)) {
    const at = `${where}: agent '${id}'`;
    if (!AGENT_ID.test(id)) {
      problems.push(`${at}: the id must be 1-64 letters, digits, '.', '_' or '-'`);
      continue;
    }
    const parsed = agentSchema.safeParse(value);
    if (!parsed.success) {
      problems.push(...parsed.error.issues.map((i) => `${at}, field '${fieldOf(i.path)}': ${i.message}`));
      continue;
    }
    const entry = parsed.data;
    if (!known.agents.includes(id) && !entry.instructions) {
      problems.push(
        `${at}, field 'instructions': required for a new agent (known agents: ${known.agents.join(', ')})`,
      );
    }
    entry.tools?.forEach((tool, i) => {
      if (!known.tools.includes(tool))
        problems.push(
          `${at}, field 'tools.${i}': no server tool '${tool}' (known: ${known.tools.join(', ')})`,
        );
    });
    entry.mcpServers?.forEach((server, i) => {
      if (!mcpServers.has(server) && !problems.some((p) => p.includes(`MCP server '${server}'`)))
        problems.push(
          `${at}, field 'mcpServers.${i}': no MCP server '${server}' in mcpServers (${[...mcpServers.keys()].join(', ') || 'none'})`,
        );
    });
    agents.set(id, entry);
  }
  withEnvironment(agents, known.agents, env, problems);
  if (problems.length) throw ConfigError.invalid(problems);
  return { agents, mcpServers, digest: createHash('sha256').update(text).digest('hex') };
}

/** The entries of a section that must be an object. */
function entriesOf(section: unknown, at: string, problems: string[]): Array<[string, unknown]> {
  if (section === undefined || section === null) return [];
  if (typeof section !== 'object' || Array.isArray(section)) {
    problems.push(`${at}: must be an object keyed by name`);
    return [];
  }
  return Object.entries(section);
}

/** An MCP server's entry: stdio with `command`, Streamable HTTP with `url`. */
function serverEntry(
  value: unknown,
  at: string,
  env: Record<string, string | undefined>,
  problems: string[],
): McpServerEntry | undefined {
  const fields = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const transport = 'command' in fields ? 'stdio' : 'url' in fields ? 'http' : undefined;
  if (!transport) {
    problems.push(`${at}: needs 'command' (stdio) or 'url' (Streamable HTTP)`);
    return undefined;
  }
  const unset = problems.length;
  const filled = expanded(fields, at, env, problems);
  // A variable that is not set was said: what it would have filled is not judged as well.
  if (problems.length > unset) return undefined;
  const parsed = (transport === 'stdio' ? stdioSchema : httpSchema).safeParse(filled);
  if (!parsed.success) {
    problems.push(...parsed.error.issues.map((i) => `${at}, field '${fieldOf(i.path)}': ${i.message}`));
    return undefined;
  }
  return { ...parsed.data, transport } as McpServerEntry;
}

/** `${VAR}` in a server's URL, header, command, argument, `cwd` or `env` value: the environment's VAR. */
function expanded(
  fields: Record<string, unknown>,
  at: string,
  env: Record<string, string | undefined>,
  problems: string[],
): Record<string, unknown> {
  const fill = (text: unknown, field: string): unknown =>
    typeof text !== 'string'
      ? text
      : text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_all, name: string) => {
          const value = env[name];
          if (value === undefined)
            problems.push(`${at}, field '${field}': names \${${name}}, which is not set`);
          return value ?? '';
        });
  const fillAll = (record: unknown, field: string) =>
    typeof record === 'object' && record !== null && !Array.isArray(record)
      ? Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fill(v, `${field}.${k}`)]))
      : record;
  const filled = { ...fields };
  for (const field of ['url', 'command', 'cwd'] as const) {
    if (field in fields) filled[field] = fill(fields[field], field);
  }
  if (Array.isArray(fields.args)) filled.args = fields.args.map((arg, i) => fill(arg, `args.${i}`));
  for (const field of ['headers', 'env'] as const) {
    if (field in fields) filled[field] = fillAll(fields[field], field);
  }
  return filled;
}

/** `AGENT_<ID>_MODEL` / `_INSTRUCTIONS` over the file's entries; a variable naming no agent is refused. */
function withEnvironment(
  agents: Map<string, AgentEntry>,
  builtIn: readonly string[],
  env: Record<string, string | undefined>,
  problems: string[],
): void {
  const ids = [...new Set([...builtIn, ...agents.keys()])];
  const known = new Set(ids.flatMap((id) => [envKey(id, 'MODEL'), envKey(id, 'INSTRUCTIONS')]));
  const stray = Object.keys(env).filter(
    (key) => /^AGENT_.+_(MODEL|INSTRUCTIONS)$/.test(key) && !known.has(key),
  );
  if (stray.length) problems.push(`${stray[0]}: names no agent (known: ${ids.join(', ')})`);
  for (const id of ids) {
    const model = env[envKey(id, 'MODEL')];
    const instructions = env[envKey(id, 'INSTRUCTIONS')];
    if (!model && !instructions) continue;
    if (model && !modelId.safeParse(model).success) {
      problems.push(`${envKey(id, 'MODEL')}: must be 'scripted' or a provider/model id`);
    }
    agents.set(id, {
      ...agents.get(id),
      ...(model ? { model } : {}),
      ...(instructions ? { instructions } : {}),
    });
  }
}

function fieldOf(path: PropertyKey[]): string {
  return path.map(String).join('.') || '(the entry)';
}

/** A pattern of tool names (`*` any characters) as a test. */
export function toolMatcher(patterns: readonly string[]): (name: string) => boolean {
  const tests = patterns.map(
    (p) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`),
  );
  return (name) => tests.some((t) => t.test(name));
}
