/** What the conformance kit is pointed at, and how it provokes a backend's model. */
export type ConformanceTarget = {
  /** The route prefix of the backend, e.g. `http://127.0.0.1:3000/io-bridge` (no trailing slash needed). */
  base: string;
  /** Sent with every request (`Authorization`, `X-Resource-Id`, …). */
  headers?: Record<string, string>;
};

export type ConformanceLevel = 1 | 2 | 3 | 4;

/**
 * `protocol`: the four levels as the io.Intelligence Agent Protocol states them (and AG-UI 1.0 where it
 * defers to it). `io-bridge`: those, plus io-bridge's own contract as extensions, reported apart.
 */
export type ConformanceProfile = 'protocol' | 'io-bridge';

export type ConformanceOptions = {
  levels: ConformanceLevel[];
  profile: ConformanceProfile;
  /** The longest a check may take, in ms. */
  timeoutMs: number;
  /** `forwardedProps.agentId` of every run; unset: the backend's default agent. */
  agentId?: string;
  prompts: {
    /** Any prompt the agent answers with text and no tool call. */
    text: string;
    /** Makes the agent call one of its server tools. */
    serverTool: string;
    /** Makes the agent call the kit's frontend tool `conformance_lookup` (declared in `RunAgentInput.tools`). */
    frontendTool: string;
    /** Makes the agent call a server tool and `conformance_lookup` in the same step. */
    mixed: string;
    /** Makes the agent call one of its tools that needs a person's approval (`requiresApproval` in GET /agents). */
    approval: string;
  };
};

/** The frontend tool every Level 2 run declares: the kit plays the frontend and answers it. */
export const FRONTEND_TOOL = {
  name: 'conformance_lookup',
  description: 'Looks a word up in the browser. Call it when the user asks to look something up.',
  parameters: {
    type: 'object',
    properties: { query: { type: 'string', description: 'what to look up' } },
    required: ['query'],
  },
};

/** Defaults for io-bridge's scripted model (README "The scripted model"). */
export const DEFAULT_OPTIONS: ConformanceOptions = {
  levels: [1, 2, 3, 4],
  profile: 'protocol',
  timeoutMs: 30_000,
  prompts: {
    text: 'hello from the conformance kit',
    serverTool: '/tool calculate {"expression":"2+3*4"}',
    frontendTool: `/tool ${FRONTEND_TOOL.name} {"query":"Paris"}`,
    mixed: `/tool calculate {"expression":"6*7"}\n/tool ${FRONTEND_TOOL.name} {"query":"Lyon"}`,
    approval: '/tool publish_note {"text":"from the conformance kit"}',
  },
};

/** Parses `--levels`-style text: `1,2,4` or `1-3`. */
export function parseLevels(text: string): ConformanceLevel[] {
  const levels = new Set<ConformanceLevel>();
  for (const part of text.split(',').map((p) => p.trim())) {
    const range = /^([1-4])(?:-([1-4]))?$/.exec(part);
    if (!range) throw new Error(`levels: '${part}' is not a level 1–4 or a range such as 1-3`);
    for (let l = Number(range[1]); l <= Number(range[2] ?? range[1]); l++) levels.add(l as ConformanceLevel);
  }
  return [...levels].sort();
}
