import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../config/config';

const overrideSchema = z.strictObject({
  model: z
    .string()
    .regex(/^(scripted|[a-z0-9-]+\/\S+)$/, "must be 'scripted' or a provider/model id")
    .optional(),
  instructions: z.string().min(1).optional(),
  /** The model's context window in tokens (AGENTS_CONFIG only). */
  contextTokens: z.number().int().min(256).max(10_000_000).optional(),
});
const fileSchema = z.record(z.string(), overrideSchema);

export type AgentOverride = z.infer<typeof overrideSchema>;

/** `AGENT_MY_AGENT_MODEL` for agent id `my-agent`. */
export const envKey = (agentId: string, field: 'MODEL' | 'INSTRUCTIONS') =>
  `AGENT_${agentId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${field}`;

/**
 * Operator overrides of agents' model and instructions, without a code change: a JSON file
 * (`AGENTS_CONFIG`, e.g. a mounted ConfigMap: `{"assistant": {"model": "openai/gpt-4o-mini"}}`) and
 * environment variables, which win. A bad file stops the service at boot with a message naming it.
 */
export function loadOverrides(
  agentIds: string[],
  path: string | undefined,
  env: Record<string, string | undefined>,
): Map<string, AgentOverride> {
  let fromFile: Record<string, AgentOverride> = {};
  if (path) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw ConfigError.invalid([`AGENTS_CONFIG: cannot read ${path}: ${(err as Error).message}`]);
    }
    const parsed = fileSchema.safeParse(raw);
    if (!parsed.success) {
      throw ConfigError.invalid(
        parsed.error.issues.map((i) => `AGENTS_CONFIG ${i.path.join('.')}: ${i.message}`),
      );
    }
    const unknown = Object.keys(parsed.data).filter((id) => !agentIds.includes(id));
    if (unknown.length) {
      throw ConfigError.invalid([`AGENTS_CONFIG: unknown agent(s) ${unknown.join(', ')}`]);
    }
    fromFile = parsed.data;
  }
  const known = new Set(agentIds.flatMap((id) => [envKey(id, 'MODEL'), envKey(id, 'INSTRUCTIONS')]));
  const stray = Object.keys(env).filter((key) => !known.has(key));
  if (stray.length) {
    throw ConfigError.invalid([`${stray[0]}: names no agent (known: ${agentIds.join(', ')})`]);
  }
  const out = new Map<string, AgentOverride>();
  for (const id of agentIds) {
    const merged = {
      ...fromFile[id],
      ...(env[envKey(id, 'MODEL')] ? { model: env[envKey(id, 'MODEL')] } : {}),
      ...(env[envKey(id, 'INSTRUCTIONS')] ? { instructions: env[envKey(id, 'INSTRUCTIONS')] } : {}),
    };
    const checked = overrideSchema.safeParse(merged);
    if (!checked.success) {
      throw ConfigError.invalid([`${envKey(id, 'MODEL')}: ${checked.error.issues[0].message}`]);
    }
    out.set(id, checked.data);
  }
  return out;
}
