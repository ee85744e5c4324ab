/**
 * What the RunLifecycle specs share: the stream checker they judge every stream with (the test
 * oracle), and harnesses that play upstream events through a lifecycle. Not a spec itself.
 */
import { AbstractAgent, verifyEvents } from '@ag-ui/client';
import type { BaseEvent, Message } from '@ag-ui/core';
import { EventSchema } from '@ag-ui/core/schemas';
import { isDeepStrictEqual } from 'node:util';
import { from } from 'rxjs';
import { AguiEvent, RUN_ERROR_CODES, RunErrorCode, UpstreamEvent } from '../../protocol/agui-events';
import { RunLifecycle } from './run-lifecycle';

export const THREAD = 'thread-1';
export const RUN = 'run-1';
export const ERROR_CODES: readonly RunErrorCode[] = RUN_ERROR_CODES;

// ---------------------------------------------------------------------------------------------------
// The checker: every guarantee of docs/protocol.md#the-stream, asserted on one run's output.
// ---------------------------------------------------------------------------------------------------

/** The fields each event must carry besides `type` and `timestamp`: all strings. */
const REQUIRED: Record<AguiEvent['type'], readonly string[]> = {
  RUN_STARTED: ['threadId', 'runId'],
  RUN_FINISHED: ['threadId', 'runId'],
  RUN_ERROR: ['message', 'code'],
  STEP_STARTED: ['stepName'],
  STEP_FINISHED: ['stepName'],
  TEXT_MESSAGE_START: ['messageId', 'role'],
  TEXT_MESSAGE_CONTENT: ['messageId', 'delta'],
  TEXT_MESSAGE_END: ['messageId'],
  TOOL_CALL_START: ['toolCallId', 'toolCallName', 'parentMessageId'],
  TOOL_CALL_ARGS: ['toolCallId', 'delta'],
  TOOL_CALL_END: ['toolCallId'],
  TOOL_CALL_RESULT: ['messageId', 'toolCallId', 'content', 'role'],
  REASONING_START: ['messageId'],
  REASONING_MESSAGE_START: ['messageId', 'role'],
  REASONING_MESSAGE_CONTENT: ['messageId', 'delta'],
  REASONING_MESSAGE_END: ['messageId'],
  REASONING_END: ['messageId'],
};
const OPTIONAL: Partial<Record<AguiEvent['type'], readonly string[]>> = { RUN_FINISHED: ['result'] };
/** Fields that name something and so may never be empty (TOOL_CALL_RESULT.content may be ''). */
const NON_EMPTY = new Set([
  'threadId',
  'runId',
  'message',
  'code',
  'stepName',
  'messageId',
  'delta',
  'toolCallId',
  'toolCallName',
  'parentMessageId',
  'role',
]);

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The path of the first null or undefined value inside `value`, if any. */
function nullishPath(value: unknown, path: string): string | undefined {
  if (value === null || value === undefined) return path || '(the event)';
  if (typeof value !== 'object') return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const found = nullishPath(inner, `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/**
 * Throws, naming the rule and the event, unless `events` is a well-formed run: RUN_STARTED first and
 * once, one terminal event last, every message / reasoning message / tool call / step opened before use
 * and closed before the terminal, no empty delta, tool arguments that form a JSON object, results only
 * for ended calls and once, integer timestamps, no null or undefined anywhere, AG-UI 1.0 shapes.
 */
export function checkStream(
  events: readonly AguiEvent[],
  ids: { threadId: string; runId: string } = { threadId: THREAD, runId: RUN },
): void {
  const fail = (i: number, rule: string): never => {
    const listing = events
      .slice(0, 300)
      .map((e, j) => `${j === i ? '>>' : '  '} ${j} ${JSON.stringify(e)}`)
      .join('\n');
    throw new Error(`stream rule broken at event ${i}: ${rule}\n${listing}`);
  };
  if (events.length < 2) fail(0, 'a run has at least RUN_STARTED and a terminal event');

  const openText = new Set<string>();
  /** Text message and tool result message ids: each names one message of the thread. */
  const messageIds = new Set<string>();
  const openReasoning = new Set<string>();
  const openReasoningMessages = new Set<string>();
  const calls = new Map<string, { args: string; ended: boolean; results: number }>();
  const openSteps: string[] = [];
  let terminalAt = -1;

  events.forEach((event, i) => {
    const e = event as unknown as Record<string, unknown>;
    if (terminalAt >= 0) fail(i, `nothing may follow the terminal event (at ${terminalAt})`);

    // Shape: field names exactly as AG-UI, strings where strings belong, nothing null, JSON-safe.
    const required = REQUIRED[event.type];
    if (!required) fail(i, `unknown event type ${String(e.type)}`);
    const allowed = new Set(['type', 'timestamp', ...required, ...(OPTIONAL[event.type] ?? [])]);
    for (const key of Object.keys(e)) if (!allowed.has(key)) fail(i, `unexpected field '${key}'`);
    for (const key of required) {
      if (typeof e[key] !== 'string') fail(i, `'${key}' must be a string`);
      if (NON_EMPTY.has(key) && e[key] === '') fail(i, `'${key}' must not be empty`);
    }
    if (typeof e.timestamp !== 'number' || !Number.isInteger(e.timestamp) || e.timestamp <= 0) {
      fail(i, 'timestamp must be integer epoch milliseconds');
    }
    const nullish = nullishPath(e, '');
    if (nullish) fail(i, `${nullish} is null or undefined`);
    if (!isDeepStrictEqual(JSON.parse(JSON.stringify(e)), e))
      fail(i, 'the event does not survive a JSON round trip');
    const schema = EventSchema.safeParse(e);
    if (!schema.success) fail(i, `not an AG-UI 1.0 event: ${schema.error.message}`);

    switch (event.type) {
      case 'RUN_STARTED':
        if (i !== 0) fail(i, 'RUN_STARTED comes first and only once');
        if (event.threadId !== ids.threadId || event.runId !== ids.runId)
          fail(i, 'threadId/runId not echoed');
        break;
      case 'RUN_FINISHED':
      case 'RUN_ERROR':
        if (i === 0) fail(i, 'RUN_STARTED must come first');
        terminalAt = i;
        if (openText.size)
          fail(i, `text message(s) ${[...openText].join(', ')} not closed before the terminal event`);
        if (openReasoningMessages.size || openReasoning.size) {
          fail(i, `reasoning ${[...openReasoning, ...openReasoningMessages].join(', ')} not closed`);
        }
        for (const [id, call] of calls)
          if (!call.ended) fail(i, `tool call ${id} not closed before the terminal event`);
        if (openSteps.length)
          fail(i, `step(s) ${openSteps.join(', ')} not finished before the terminal event`);
        if (event.type === 'RUN_FINISHED' && (event.threadId !== ids.threadId || event.runId !== ids.runId)) {
          fail(i, 'threadId/runId not echoed');
        }
        if (event.type === 'RUN_ERROR' && !ERROR_CODES.includes(event.code))
          fail(i, `unknown error code ${event.code}`);
        break;
      case 'TEXT_MESSAGE_START':
        if (event.role !== 'assistant') fail(i, "role must be 'assistant'");
        if (messageIds.has(event.messageId)) fail(i, `message id ${event.messageId} started twice`);
        messageIds.add(event.messageId);
        openText.add(event.messageId);
        break;
      case 'TEXT_MESSAGE_CONTENT':
        if (!openText.has(event.messageId)) fail(i, 'TEXT_MESSAGE_CONTENT for a message that is not open');
        break;
      case 'TEXT_MESSAGE_END':
        if (!openText.delete(event.messageId)) fail(i, 'TEXT_MESSAGE_END for a message that is not open');
        break;
      case 'REASONING_START':
        if (openReasoning.has(event.messageId)) fail(i, 'REASONING_START for reasoning already open');
        openReasoning.add(event.messageId);
        break;
      case 'REASONING_MESSAGE_START':
        if (event.role !== 'reasoning') fail(i, "role must be 'reasoning'");
        if (!openReasoning.has(event.messageId))
          fail(i, 'REASONING_MESSAGE_START outside REASONING_START/END');
        if (openReasoningMessages.has(event.messageId)) fail(i, 'reasoning message started while open');
        openReasoningMessages.add(event.messageId);
        break;
      case 'REASONING_MESSAGE_CONTENT':
        if (!openReasoningMessages.has(event.messageId))
          fail(i, 'reasoning content for a message that is not open');
        break;
      case 'REASONING_MESSAGE_END':
        if (!openReasoningMessages.delete(event.messageId))
          fail(i, 'REASONING_MESSAGE_END for a message not open');
        break;
      case 'REASONING_END':
        if (openReasoningMessages.has(event.messageId)) fail(i, 'REASONING_END before its message ended');
        if (!openReasoning.delete(event.messageId)) fail(i, 'REASONING_END for reasoning that is not open');
        break;
      case 'TOOL_CALL_START':
        if (calls.has(event.toolCallId)) fail(i, `tool call ${event.toolCallId} started twice`);
        calls.set(event.toolCallId, { args: '', ended: false, results: 0 });
        break;
      case 'TOOL_CALL_ARGS': {
        const call = calls.get(event.toolCallId);
        if (!call || call.ended) fail(i, 'TOOL_CALL_ARGS outside the START and END of its call');
        call!.args += event.delta;
        break;
      }
      case 'TOOL_CALL_END': {
        const call = calls.get(event.toolCallId);
        if (!call || call.ended) fail(i, 'TOOL_CALL_END for a call that is not open');
        let args: unknown;
        try {
          args = JSON.parse(call!.args);
        } catch {
          fail(i, `the ARGS deltas of ${event.toolCallId} are not JSON: ${JSON.stringify(call!.args)}`);
        }
        if (!isPlainObject(args))
          fail(i, `the ARGS of ${event.toolCallId} are not a JSON object: ${call!.args}`);
        call!.ended = true;
        break;
      }
      case 'TOOL_CALL_RESULT': {
        const call = calls.get(event.toolCallId);
        if (!call) fail(i, 'TOOL_CALL_RESULT for a call never started');
        if (!call!.ended) fail(i, 'TOOL_CALL_RESULT before its TOOL_CALL_END');
        if (call!.results++ > 0) fail(i, `a second TOOL_CALL_RESULT for ${event.toolCallId}`);
        if (event.role !== 'tool') fail(i, "role must be 'tool'");
        if (messageIds.has(event.messageId)) fail(i, `message id ${event.messageId} used twice`);
        messageIds.add(event.messageId);
        break;
      }
      case 'STEP_STARTED':
        if (openSteps.includes(event.stepName)) fail(i, `step ${event.stepName} started while open`);
        openSteps.push(event.stepName);
        break;
      case 'STEP_FINISHED': {
        const index = openSteps.lastIndexOf(event.stepName);
        if (index < 0) fail(i, `STEP_FINISHED for step ${event.stepName} that is not open`);
        openSteps.splice(index, 1);
        break;
      }
    }
  });
  if (terminalAt !== events.length - 1)
    fail(events.length - 1, 'the last event must be RUN_FINISHED or RUN_ERROR');
}

/** The client bundles its own rxjs copy: its Observable type is not ours, though it behaves the same. */
type ClientObservable = ReturnType<AbstractAgent['run']>;
export const clientObservable = (events: readonly AguiEvent[]): ClientObservable =>
  from(events as unknown as BaseEvent[]) as unknown as ClientObservable;

/** The official AG-UI client's own stream verification; rejects on the first event it refuses. */
export async function clientVerifies(events: readonly AguiEvent[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    verifyEvents()(clientObservable(events)).subscribe({ error: reject, complete: () => resolve() });
  });
}

/** An AG-UI client agent that "receives" `events`: what its messages become is what a frontend shows. */
class ReplayAgent extends AbstractAgent {
  constructor(private readonly events: readonly AguiEvent[]) {
    super({ threadId: THREAD });
  }

  run(): ClientObservable {
    return clientObservable(this.events);
  }
}

export async function clientMessages(events: readonly AguiEvent[]): Promise<Message[]> {
  const agent = new ReplayAgent(events);
  await agent.runAgent({ runId: RUN });
  return agent.messages;
}

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

export type Harness = { lifecycle: RunLifecycle; events: AguiEvent[]; warnings: string[] };

/** A lifecycle recording what it emits and warns; generated ids are gen-1, gen-2, … */
export function harness(newId: (() => string) | null = null): Harness {
  const events: AguiEvent[] = [];
  const warnings: string[] = [];
  let n = 0;
  const lifecycle = new RunLifecycle({
    threadId: THREAD,
    runId: RUN,
    emit: (event) => events.push(event),
    warn: (message) => warnings.push(message),
    ...(newId === null ? { newId: () => `gen-${++n}` } : { newId }),
  });
  return { lifecycle, events, warnings };
}

/** Pushes `upstream`, ends the run with `end` (finish by default), and checks the result. */
export function run(
  upstream: UpstreamEvent[],
  end: (lifecycle: RunLifecycle) => void = (l) => l.finish(),
): Harness {
  const h = harness();
  for (const event of upstream) h.lifecycle.push(event);
  end(h.lifecycle);
  checkStream(h.events);
  return h;
}

/** The events without their timestamps, for exact comparisons. */
export const bare = (events: readonly AguiEvent[]) =>
  events.map(({ timestamp: _timestamp, ...rest }) => rest);
/** The events between RUN_STARTED and the terminal event, without timestamps. */
export const inner = (events: readonly AguiEvent[]) => bare(events.slice(1, -1));

export const STARTED = { type: 'RUN_STARTED', threadId: THREAD, runId: RUN };
export const FINISHED = { type: 'RUN_FINISHED', threadId: THREAD, runId: RUN };
export const of = <T extends AguiEvent['type']>(events: readonly AguiEvent[], type: T) =>
  events.filter((e): e is Extract<AguiEvent, { type: T }> => e.type === type);

/** Like run(), without checking: for the tests that show a rule being broken. */
export function harnessRun(upstream: UpstreamEvent[]): Harness {
  const h = harness();
  for (const event of upstream) h.lifecycle.push(event);
  h.lifecycle.finish();
  return h;
}
