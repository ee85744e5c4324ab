import { createHash } from 'node:crypto';

/** What every provider takes as a function name (OpenAI's rule, the strictest common one). */
const PROVIDER_SAFE = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The name the model knows a tool by: the client's own when every provider takes it, otherwise an
 * alias (`portal.get_positions` → `portal_get_positions_3f2a1c`), the hash keeping two names that
 * differ only in punctuation apart.
 */
export function modelToolName(name: string): string {
  if (PROVIDER_SAFE.test(name)) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 6);
  return `${name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 57)}_${hash}`;
}

/**
 * A run's tool names as the client sent them and as the model knows them: aliased on the way to the
 * model, restored on the way back (the wire, storage). Empty, and free, when every name is safe.
 */
export class ToolAliases {
  private readonly toClient = new Map<string, string>();
  private readonly toModel = new Map<string, string>();

  /** The model's name for `name`, remembered so the model's calls can be restored. */
  add(name: string): string {
    const alias = modelToolName(name);
    if (alias !== name) {
      this.toClient.set(alias, name);
      this.toModel.set(name, alias);
    }
    return alias;
  }

  get empty(): boolean {
    return this.toClient.size === 0;
  }

  /** A name the model used, as the client knows it. */
  client(name: string): string {
    return this.toClient.get(name) ?? name;
  }

  /** A name from the conversation, as the model knows it (names the client sent, and calls stored with them). */
  model(name: string): string {
    return this.toModel.get(name) ?? (PROVIDER_SAFE.test(name) ? name : modelToolName(name));
  }
}
