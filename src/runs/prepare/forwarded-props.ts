import { DomainError, ErrorDetail } from '../../common/errors';
import { jsonSchemaProblem } from '../../common/json-schema';
import { ClientProtocol, CLIENT_PROTOCOLS, isClientProtocol } from '../../protocol/versions';
import type { ModelSettings } from '../../agents/agent-definition';

export type { ModelSettings };

/** What a run request does when its thread has a run in progress (`forwardedProps.ifBusy`). */
export const IF_BUSY = ['reject', 'enqueue', 'interrupt'] as const;
export type IfBusy = (typeof IF_BUSY)[number];

export type ModelCeilings = {
  maxTokens: number;
  maxSteps: number;
  maxRetries: number;
  maxLastMessages: number;
  /** The longest disconnect grace a client may ask for. */
  maxDisconnectGraceMs: number;
};

/** What the bridge reads from `forwardedProps` (docs/protocol.md#forwardedprops); anything else goes to the agent as request context. */
export type RunOptions = {
  agentId?: string;
  modelSettings: ModelSettings;
  maxSteps?: number;
  lastMessages?: number;
  readOnly: boolean;
  generateTitle: boolean;
  /** The request names memory (`memory.thread`, `memoryOptions` or `memory.options`): the run is stored in its thread. */
  namesMemory: boolean;
  /** How long the run goes on once its client left, for a rejoin (`disconnectGraceMs`), clamped to the ceiling. */
  disconnectGraceMs?: number;
  /** What the request does when its thread has a run in progress (default `reject`: 409 THREAD_BUSY). */
  ifBusy: IfBusy;
  /** How this run answers frontend tools (docs/clients.md); absent: the server's CLIENT_PROTOCOL. */
  clientProtocol?: ClientProtocol;
  /** Absent also when the client sent `structuredOutput` without a schema. */
  structuredOutput?: { schema: Record<string, unknown> };
  extras: Record<string, unknown>;
};

const KNOWN = new Set([
  'agentId',
  'resourceId',
  'memoryOptions',
  'memory',
  'modelSettings',
  'structuredOutput',
  'disconnectGraceMs',
  'clientProtocol',
  'ifBusy',
]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const clamp = (v: number, min: number, max: number) => Math.min(max, Math.max(min, v));

const NOT_JSON = Symbol('not JSON');
const parsedJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
};

/**
 * Reads `forwardedProps`. A known key of the wrong type is a 400 naming it; a number outside its
 * range is clamped to it (a client asking for more than allowed gets the most allowed).
 * `memory.thread` must name the run's `threadId` (given as `threadId`).
 */
export function parseForwardedProps(
  props: Record<string, unknown> | undefined,
  ceilings: ModelCeilings,
  threadId?: string,
): RunOptions {
  const p = props ?? {};
  const problems: ErrorDetail[] = [];
  const number = (
    obj: Record<string, unknown>,
    key: string,
    path: string,
    integer = false,
  ): number | undefined => {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
      problems.push({ path: `${path}.${key}`, message: integer ? 'must be an integer' : 'must be a number' });
      return undefined;
    }
    return v;
  };
  const boolean = (obj: Record<string, unknown>, key: string, path: string): boolean | undefined => {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') problems.push({ path: `${path}.${key}`, message: 'must be a boolean' });
    return typeof v === 'boolean' ? v : undefined;
  };
  const object = (value: unknown, path: string): Record<string, unknown> => {
    if (value === undefined || value === null) return {};
    if (!isObject(value)) problems.push({ path, message: 'must be an object' });
    return isObject(value) ? value : {};
  };

  const disconnectGraceMs = number(p, 'disconnectGraceMs', 'forwardedProps', true);
  if (p.agentId !== undefined && typeof p.agentId !== 'string') {
    problems.push({ path: 'forwardedProps.agentId', message: 'must be a string' });
  }

  if (p.clientProtocol !== undefined && !isClientProtocol(p.clientProtocol)) {
    problems.push({
      path: 'forwardedProps.clientProtocol',
      message: `must be one of ${CLIENT_PROTOCOLS.join(', ')}`,
    });
  }

  const ifBusy = p.ifBusy ?? 'reject';
  if (!(IF_BUSY as readonly unknown[]).includes(ifBusy)) {
    problems.push({ path: 'forwardedProps.ifBusy', message: `must be one of ${IF_BUSY.join(', ')}` });
  }

  const ms = object(p.modelSettings, 'forwardedProps.modelSettings');
  const path = 'forwardedProps.modelSettings';
  const maxTokens = number(ms, 'maxTokens', path, true);
  const temperature = number(ms, 'temperature', path);
  const topP = number(ms, 'topP', path);
  const topK = number(ms, 'topK', path, true);
  const maxRetries = number(ms, 'maxRetries', path, true);
  const maxSteps = number(ms, 'maxSteps', path, true);
  const modelSettings: ModelSettings = {
    ...(maxTokens !== undefined ? { maxOutputTokens: clamp(maxTokens, 1, ceilings.maxTokens) } : {}),
    ...(temperature !== undefined ? { temperature: clamp(temperature, 0, 2) } : {}),
    ...(topP !== undefined ? { topP: clamp(topP, 0, 1) } : {}),
    ...(topK !== undefined ? { topK: clamp(topK, 1, 1000) } : {}),
    ...(maxRetries !== undefined ? { maxRetries: clamp(maxRetries, 0, ceilings.maxRetries) } : {}),
  };

  // io.Assist sends `memory: {thread, resource, options}`; the protocol names it `memoryOptions`.
  const memory = object(p.memory, 'forwardedProps.memory');
  const memoryOptions = {
    ...object(memory.options, 'forwardedProps.memory.options'),
    ...object(p.memoryOptions, 'forwardedProps.memoryOptions'),
  };
  const memoryPath =
    p.memoryOptions !== undefined ? 'forwardedProps.memoryOptions' : 'forwardedProps.memory.options';
  const lastMessages = number(memoryOptions, 'lastMessages', memoryPath, true);
  const readOnly = boolean(memoryOptions, 'readOnly', memoryPath) ?? false;
  const generateTitle = boolean(memoryOptions, 'generateTitle', memoryPath) ?? false;
  // Mastra accepts the thread as its id or as `{id, ...}`; either way it is the run's thread or a mistake.
  const thread = isObject(memory.thread) ? memory.thread.id : memory.thread;
  if (memory.thread !== undefined && memory.thread !== null) {
    if (typeof thread !== 'string') {
      problems.push({ path: 'forwardedProps.memory.thread', message: 'must be a string (a thread id)' });
    } else if (threadId !== undefined && thread !== threadId) {
      problems.push({ path: 'forwardedProps.memory.thread', message: 'must equal threadId' });
    }
  }
  const namesMemory =
    typeof thread === 'string' ||
    (p.memoryOptions !== undefined && p.memoryOptions !== null) ||
    (memory.options !== undefined && memory.options !== null);

  let structuredOutput: RunOptions['structuredOutput'];
  const so = object(p.structuredOutput, 'forwardedProps.structuredOutput');
  const schemaPath = 'forwardedProps.structuredOutput.schema';
  // io.Assist sends `{}` or `{schema: undefined}` on plain requests, and sometimes the schema as JSON text.
  if (so.schema !== undefined && so.schema !== null) {
    const schema = typeof so.schema === 'string' ? parsedJson(so.schema) : so.schema;
    const problem = schema === NOT_JSON ? 'is a string that is not JSON' : jsonSchemaProblem(schema);
    if (problem) problems.push({ path: schemaPath, message: problem });
    else structuredOutput = { schema: schema as Record<string, unknown> };
  }

  if (problems.length) throw new DomainError('VALIDATION_FAILED', 'Invalid forwardedProps', problems);
  return {
    ...(typeof p.agentId === 'string' ? { agentId: p.agentId } : {}),
    modelSettings,
    ...(maxSteps !== undefined ? { maxSteps: clamp(maxSteps, 1, ceilings.maxSteps) } : {}),
    ...(lastMessages !== undefined ? { lastMessages: clamp(lastMessages, 0, ceilings.maxLastMessages) } : {}),
    readOnly,
    generateTitle,
    namesMemory,
    ifBusy: ifBusy as IfBusy,
    ...(disconnectGraceMs !== undefined
      ? { disconnectGraceMs: clamp(disconnectGraceMs, 0, ceilings.maxDisconnectGraceMs) }
      : {}),
    ...(structuredOutput ? { structuredOutput } : {}),
    ...(isClientProtocol(p.clientProtocol) ? { clientProtocol: p.clientProtocol } : {}),
    extras: Object.fromEntries(Object.entries(p).filter(([key]) => !KNOWN.has(key))),
  };
}
