import { CheckFailure } from './check';
import type { CheckContext } from './check';
import { runBody } from './http';
import type { Event, RunStream } from './http';
import { brief } from './sse';

export { brief };

/** Throws a check failure showing `seen` unless `condition` holds. */
export function must(condition: unknown, seen: string): asserts condition {
  if (!condition) throw new CheckFailure(seen);
}

export const ofType = (events: Event[], type: string) => events.filter((e) => e.type === type);

/** Event types in order, repeats folded: `RUN_STARTED, TEXT_MESSAGE_CONTENT ×4, RUN_FINISHED`. */
export function sequence(events: Event[]): string {
  const parts: string[] = [];
  let last = '';
  let n = 0;
  const flush = () => last && parts.push(n > 1 ? `${last} ×${n}` : last);
  for (const e of events) {
    if (e.type === last) n++;
    else {
      flush();
      last = String(e.type);
      n = 1;
    }
  }
  flush();
  return parts.join(', ') || 'no events';
}

/** Each tool call of a stream: its name, its argument text, where it ended, and its results. */
export function toolCalls(events: Event[]) {
  return ofType(events, 'TOOL_CALL_START').map((start) => ({
    toolCallId: start.toolCallId as string,
    name: start.toolCallName as string,
    start,
    args: ofType(events, 'TOOL_CALL_ARGS')
      .filter((e) => e.toolCallId === start.toolCallId)
      .map((e) => String(e.delta))
      .join(''),
    endIndex: events.findIndex((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === start.toolCallId),
    results: ofType(events, 'TOOL_CALL_RESULT').filter((e) => e.toolCallId === start.toolCallId),
  }));
}

/** The text the stream showed: its TEXT_MESSAGE_CONTENT deltas, joined. */
export const shownText = (events: Event[]) =>
  ofType(events, 'TEXT_MESSAGE_CONTENT')
    .map((e) => String(e.delta))
    .join('');

/** Where a value holds a null, e.g. `$.result.x`, or undefined. */
export function nullAt(value: unknown, path = '$'): string | undefined {
  if (value === null) return path;
  if (typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      const hit = nullAt(v, `${path}.${k}`);
      if (hit) return hit;
    }
  return undefined;
}

/** Asserts a run was accepted: 200 and a stream. */
export function accepted(stream: RunStream): void {
  must(stream.res.status === 200, `POST /run answered ${stream.res.status}: ${brief(stream.raw())}`);
}

/** The terminal events of a stream. */
export const terminals = (events: Event[]) =>
  events.filter((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR');

/** Asserts the stream contains RUN_FINISHED (a run that went through, wherever its other faults lie). */
export function finished(stream: RunStream): void {
  must(
    stream.events.some((e) => e.type === 'RUN_FINISHED'),
    `no RUN_FINISHED; the stream had: ${sequence(stream.events)}${stream.problems.length ? `; ${stream.problems[0]}` : ''}`,
  );
}

/** A run input for this kit run's agent. */
export const body = (ctx: CheckContext, text: string, extra: Record<string, unknown> = {}) =>
  runBody(text, ctx.options.agentId, extra);

/** The kit's text run, shared by the checks that only read it. */
export const plainRun = (ctx: CheckContext) =>
  ctx.shared('plain run', async () => {
    const stream = await ctx.client.run(body(ctx, ctx.options.prompts.text));
    accepted(stream);
    return stream;
  });

/** An array in a JSON answer: the answer itself, or its field `key` (`{threads: […]}`). */
export function listIn(value: any, key: string): any[] | undefined {
  if (Array.isArray(value)) return value;
  if (value && Array.isArray(value[key])) return value[key];
  return undefined;
}

/** Asserts io-bridge's error envelope `{statusCode, code, message, details?}` with `status` (and `code`). */
export async function errorEnvelope(
  res: Response,
  status: number,
  code?: string | string[],
): Promise<string> {
  const text = await res.text();
  must(res.status === status, `${res.status} ${brief(text)}, where ${status} was due`);
  must(
    /^application\/json/.test(res.headers.get('content-type') ?? ''),
    `${status} with content-type ${res.headers.get('content-type')}: ${brief(text)}`,
  );
  let envelope: any;
  try {
    envelope = JSON.parse(text);
  } catch {
    must(false, `${status} whose body is not JSON: ${brief(text)}`);
  }
  const extra = Object.keys(envelope ?? {}).filter(
    (k) => !['statusCode', 'code', 'message', 'details'].includes(k),
  );
  must(
    envelope?.statusCode === status &&
      typeof envelope.code === 'string' &&
      /^[A-Z][A-Z_]+$/.test(envelope.code) &&
      typeof envelope.message === 'string' &&
      /\S/.test(envelope.message) &&
      extra.length === 0,
    `${status} with a body that is not {statusCode, code, message, details?}: ${brief(text)}`,
  );
  const codes = code === undefined ? undefined : [code].flat();
  must(
    !codes || codes.includes(envelope.code),
    `${status} ${envelope.code}, where ${codes?.join(' or ')} was due`,
  );
  return `${status} ${envelope.code}`;
}
