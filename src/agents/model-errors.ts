import { MODEL_FAILURE_CODES, ModelFailureCode } from '../protocol/model-failure-codes';

export { MODEL_FAILURE_CODES };
export type { ModelFailureCode };

/** What a user is told: nothing of the provider's own text (host names, keys, quotas of others). */
const SAFE_MESSAGES: Record<ModelFailureCode, string> = {
  MODEL_RATE_LIMITED: 'The model provider is limiting requests; try again shortly',
  MODEL_UNAVAILABLE: 'The model provider is unavailable; try again later',
  MODEL_TIMEOUT: 'The model provider did not answer in time; try again later',
  MODEL_CONTEXT_TOO_LONG: 'The conversation is too long for the model; start a new thread',
  MODEL_ERROR: 'The model provider refused the request',
};

/**
 * A model call's failure, classified: `message` is safe to show a user; `detail` (the provider's
 * own words) goes only to the log and the span. `transient` failures may be retried before the
 * call has shown anything; `retryAfterMs` is what the provider asked for.
 */
export class ModelFailure extends Error {
  constructor(
    readonly code: ModelFailureCode,
    message: string,
    readonly detail: string,
    readonly transient: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelFailure';
  }

  static of(code: ModelFailureCode, detail: string, transient = false, retryAfterMs?: number): ModelFailure {
    return new ModelFailure(code, SAFE_MESSAGES[code], detail, transient, retryAfterMs);
  }
}

/** Connection failures of Node's fetch (undici) and sockets: the provider could not be reached or hung up. */
const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

const CONTEXT_TOO_LONG =
  /context_length_exceeded|maximum context length|context window|prompt is too long|too many tokens|reduce the length/i;

type Described = {
  message?: unknown;
  statusCode?: unknown;
  responseHeaders?: unknown;
  responseBody?: unknown;
  code?: unknown;
  cause?: unknown;
};

function chainOf(error: unknown): Described[] {
  const chain: Described[] = [];
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    chain.push(e);
    e = (e as Described).cause;
  }
  return chain;
}

/** `retry-after-ms`, or `retry-after` in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(headers: unknown, now = Date.now()): number | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  const h = headers as Record<string, unknown>;
  const ms = Number(h['retry-after-ms']);
  if (typeof h['retry-after-ms'] === 'string' && Number.isFinite(ms) && ms >= 0) return ms;
  const after = h['retry-after'];
  if (typeof after !== 'string' || !after.trim()) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const firstLine = (value: unknown): string =>
  typeof value === 'string' ? value.split('\n')[0].slice(0, 500) : '';

/**
 * Classifies what a provider call failed with: an HTTP status (AI SDK's APICallError carries
 * `statusCode`, `responseHeaders`, `responseBody`), a connection failure (anywhere in its `cause`
 * chain), or else MODEL_ERROR. An error without any provider detail (the scripted model's) keeps its
 * own first line as the message.
 */
export function classifyModelError(error: unknown): ModelFailure {
  if (error instanceof ModelFailure) return error;
  const chain = chainOf(error);
  // Every message of the chain: an SDK's wrapper says what failed, its causes why.
  const detail =
    chain
      .map((e) => firstLine(e.message))
      .filter(Boolean)
      .join(': ') || String(error);
  // First: a connection lost, even under an error that carries the (successful) status of the answer it cut.
  const connection = chain.find((e) => typeof e.code === 'string' && CONNECTION_CODES.has(e.code));
  if (
    connection ||
    chain.some((e) => /^(fetch failed|terminated|other side closed)/i.test(firstLine(e.message)))
  )
    return ModelFailure.of(
      'MODEL_UNAVAILABLE',
      `${(connection?.code as string) ?? 'connection'}: ${detail}`,
      true,
    );
  // A status below 400: the answer broke while it was read (its cause says how, seen above).
  const api = chain.find((e) => typeof e.statusCode === 'number' && e.statusCode >= 400);
  if (api) {
    const status = api.statusCode as number;
    const body = typeof api.responseBody === 'string' ? api.responseBody : '';
    const text = `${status} ${detail}${body ? ` ${body.slice(0, 500)}` : ''}`;
    if (status === 429)
      return ModelFailure.of('MODEL_RATE_LIMITED', text, true, retryAfterMs(api.responseHeaders));
    if ((status === 400 || status === 413) && CONTEXT_TOO_LONG.test(`${detail} ${body}`))
      return ModelFailure.of('MODEL_CONTEXT_TOO_LONG', text);
    if (status >= 500 || status === 408)
      return ModelFailure.of('MODEL_UNAVAILABLE', text, true, retryAfterMs(api.responseHeaders));
    return ModelFailure.of('MODEL_ERROR', text);
  }
  const own = firstLine(
    (error as Described | undefined)?.message ?? (typeof error === 'string' ? error : ''),
  );
  return new ModelFailure('MODEL_ERROR', own || 'The model failed', detail, false);
}

/** The ModelFailure an error carries, itself or as a cause (Mastra may wrap what the model stream gave it). */
export function modelFailureOf(error: unknown): ModelFailure | undefined {
  return chainOf(error).find((e): e is ModelFailure => e instanceof ModelFailure);
}
