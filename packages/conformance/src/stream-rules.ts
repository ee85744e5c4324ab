import { EventSchema } from '@ag-ui/core/schemas';
import { isDeepStrictEqual } from 'node:util';
import { RUN_ERROR_CODES } from '../../../src/protocol/agui-events';
import type { Check } from './check';
import { brief, must, nullAt, ofType, sequence, terminals, toolCalls } from './check-support';
import type { Event, RunStream } from './http';

/**
 * The stream rules: what must hold for every stream a backend sends, judged on its events alone and the
 * run input it answers. The kit judges each stream it read with them; io-bridge's own tests judge theirs
 * with `streamViolations`, so each rule is written once, here.
 */

/** The run input a stream answers: the ids it echoes, its declared version, the interrupts it resumes. */
export type RunInput = { threadId: string; runId: string; protocolVersion?: unknown; resume?: unknown };

export type StreamRule = Omit<Check, 'run' | 'final'> & {
  /** True for a rule on a whole stream; false for one that also holds on a stream cut short. */
  whole: boolean;
  /** What breaks the rule in one stream, or undefined. Rules that need the run input hold without it. */
  judge: (events: Event[], input?: RunInput) => string | undefined;
  /** What the kit reports when the rule held. */
  holds: string;
};

/** The protocol's words each protocol rule quotes: a table row as `cell | cell`. */
const SEED = {
  lifecycle: 'lifecycle: one request, one SSE stream, one terminal event',
  first: 'RUN_STARTED must be first.',
  last: 'RUN_FINISHED or RUN_ERROR must be last. No events may appear after a terminal event.',
  text: 'Every open text sequence must close before the stream ends.',
  tool: 'Every open tool call must close before the stream ends.',
  delta: 'TEXT_MESSAGE_CONTENT.delta must be non-empty.',
  args: 'Concatenated TOOL_CALL_ARGS.delta values must form valid JSON.',
  ids:
    'threadId | Yes | Correlation identifier and, on persistent backends, the thread key; ' +
    'runId | Yes | Unique run identifier',
};

/** AG-UI 1.0's rules on the order of events and how a run ends (@ag-ui/core and @ag-ui/client 1.0), as stated there. */
const AG_UI_1 = {
  order:
    'the event order @ag-ui/client 1.0 verifies: a text message, tool call, reasoning span, reasoning message ' +
    'or step gets its CONTENT, ARGS or END only while it is open, after its START; none is started again while ' +
    'open, a run included',
  pending:
    'RUN_FINISHED outcome success: pendingToolCallIds, when present, must list exactly the tool calls the run ' +
    'started and did not answer with TOOL_CALL_RESULT',
  interrupts:
    'RUN_FINISHED outcome interrupt: at least one interrupt, each with an id (a resume entry answers it by ' +
    'this id) and a reason',
  usage:
    'usage: TokenUsage[]: totalTokens is inputTokens plus outputTokens; reasoningTokens is part of ' +
    'outputTokens; cachedInputTokens and cacheWriteInputTokens are part of inputTokens',
};

const DAY_MS = 24 * 3600 * 1000;

/**
 * Each event type of io-bridge's contract (docs/protocol.md#the-stream) and its fields besides `type` and
 * `timestamp`. `names`: non-empty strings. `strings`: strings that may be empty, or whose emptiness another
 * rule judges. `optional`: may be left out. `role`: the role the type carries.
 */
const CONTRACT_FIELDS: Record<
  string,
  { names: string[]; strings?: string[]; optional?: string[]; role?: string }
> = {
  RUN_STARTED: { names: ['threadId', 'runId'] },
  RUN_FINISHED: { names: ['threadId', 'runId'], optional: ['result', 'outcome', 'usage'] },
  RUN_ERROR: { names: ['message', 'code'], optional: ['usage'] },
  STEP_STARTED: { names: ['stepName'] },
  STEP_FINISHED: { names: ['stepName'] },
  TEXT_MESSAGE_START: { names: ['messageId'], role: 'assistant' },
  // An empty delta here is L1.non-empty-delta's finding.
  TEXT_MESSAGE_CONTENT: { names: ['messageId'], strings: ['delta'] },
  TEXT_MESSAGE_END: { names: ['messageId'] },
  // An empty parentMessageId is X2.parent-message-id's finding.
  TOOL_CALL_START: { names: ['toolCallId', 'toolCallName'], strings: ['parentMessageId'] },
  TOOL_CALL_ARGS: { names: ['toolCallId', 'delta'] },
  TOOL_CALL_END: { names: ['toolCallId'] },
  TOOL_CALL_RESULT: { names: ['messageId', 'toolCallId'], strings: ['content'], role: 'tool' },
  REASONING_START: { names: ['messageId'] },
  REASONING_MESSAGE_START: { names: ['messageId'], role: 'reasoning' },
  REASONING_MESSAGE_CONTENT: { names: ['messageId', 'delta'] },
  REASONING_MESSAGE_END: { names: ['messageId'] },
  REASONING_END: { names: ['messageId'] },
};

/** The spans of AG-UI 1.0 by the event types that start, continue or end them, and the field naming each. */
const SPANS: Record<string, { span: string; key: string; does: 'start' | 'use' | 'end' }> = {
  TEXT_MESSAGE_START: { span: 'text message', key: 'messageId', does: 'start' },
  TEXT_MESSAGE_CONTENT: { span: 'text message', key: 'messageId', does: 'use' },
  TEXT_MESSAGE_END: { span: 'text message', key: 'messageId', does: 'end' },
  TOOL_CALL_START: { span: 'tool call', key: 'toolCallId', does: 'start' },
  TOOL_CALL_ARGS: { span: 'tool call', key: 'toolCallId', does: 'use' },
  TOOL_CALL_END: { span: 'tool call', key: 'toolCallId', does: 'end' },
  REASONING_START: { span: 'reasoning', key: 'messageId', does: 'start' },
  REASONING_END: { span: 'reasoning', key: 'messageId', does: 'end' },
  REASONING_MESSAGE_START: { span: 'reasoning message', key: 'messageId', does: 'start' },
  REASONING_MESSAGE_CONTENT: { span: 'reasoning message', key: 'messageId', does: 'use' },
  REASONING_MESSAGE_END: { span: 'reasoning message', key: 'messageId', does: 'end' },
  STEP_STARTED: { span: 'step', key: 'stepName', does: 'start' },
  STEP_FINISHED: { span: 'step', key: 'stepName', does: 'end' },
};

/** The span an event belongs to, as `<span> <id>`, and what the event does to it; undefined for other events. */
function spanOf(e: Event): { name: string; kind: string; does: 'start' | 'use' | 'end' } | undefined {
  const span = SPANS[e.type];
  return span && { name: `${span.span} ${String(e[span.key])}`, kind: span.span, does: span.does };
}

const isTerminal = (e: Event) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR';

/** The outcome of a stream's RUN_FINISHED (AG-UI 1.0), if any. */
const outcomeOf = (events: Event[]): Record<string, any> | undefined =>
  events.find((e) => e.type === 'RUN_FINISHED')?.outcome as Record<string, any> | undefined;

const describeEvent = (events: Event[], i: number) => `event ${i + 1} ${brief(events[i], 160)}`;

const declares1x = (input: RunInput) =>
  typeof input.protocolVersion === 'string' && /^1(\.\d+)*$/.test(input.protocolVersion.trim());

/** The stream rules of the protocol's "Required lifecycle guarantees", and AG-UI 1.0's, one check each. */
export const PROTOCOL_STREAM_RULES: StreamRule[] = [
  {
    id: 'L1.run-started-first',
    level: 1,
    title: 'RUN_STARTED is the first event',
    source: { kind: 'protocol', clause: SEED.first },
    whole: false,
    holds: 'each starts with RUN_STARTED',
    judge: (events) =>
      events[0]?.type === 'RUN_STARTED'
        ? undefined
        : events.length
          ? `the first event is ${events[0].type}; RUN_STARTED ${events.some((e) => e.type === 'RUN_STARTED') ? `comes as event ${events.findIndex((e) => e.type === 'RUN_STARTED') + 1}` : 'never comes'} (${sequence(events)})`
          : 'no events',
  },
  {
    id: 'L1.one-terminal-last',
    level: 1,
    title: 'exactly one terminal event (RUN_FINISHED or RUN_ERROR), the last one: nothing after it',
    source: { kind: 'protocol', clause: `${SEED.lifecycle} … ${SEED.last}` },
    whole: true,
    holds: 'each ends with its one terminal event',
    judge: (events) => {
      const ends = terminals(events);
      if (ends.length === 0) return `no terminal event (${sequence(events)})`;
      const first = events.indexOf(ends[0]);
      if (first !== events.length - 1)
        return `${describeEvent(events, first + 1)} comes after the terminal ${ends[0].type} (event ${first + 1}): ${sequence(events)}`;
      return ends.length > 1 ? `${ends.length} terminal events` : undefined;
    },
  },
  {
    id: 'L1.text-messages-closed',
    level: 1,
    title: 'every text message started is ended (TEXT_MESSAGE_END) before the stream ends',
    source: { kind: 'protocol', clause: SEED.text },
    whole: true,
    holds: 'every TEXT_MESSAGE_START has its TEXT_MESSAGE_END',
    judge: (events) => {
      const open = ofType(events, 'TEXT_MESSAGE_START').filter(
        (start) =>
          !events
            .slice(events.indexOf(start))
            .some((e) => e.type === 'TEXT_MESSAGE_END' && e.messageId === start.messageId),
      );
      return open.length
        ? `message ${open.map((s) => s.messageId).join(', ')} never ended: ${sequence(events)}`
        : undefined;
    },
  },
  {
    id: 'L1.tool-calls-closed',
    level: 1,
    title: 'every tool call started is ended (TOOL_CALL_END) before the stream ends',
    source: { kind: 'protocol', clause: SEED.tool },
    whole: true,
    holds: 'every TOOL_CALL_START has its TOOL_CALL_END',
    judge: (events) => {
      const open = toolCalls(events).filter((c) => c.endIndex < events.indexOf(c.start));
      return open.length
        ? `tool call ${open.map((c) => c.toolCallId).join(', ')} never ended: ${sequence(events)}`
        : undefined;
    },
  },
  {
    id: 'L1.non-empty-delta',
    level: 1,
    title: 'every TEXT_MESSAGE_CONTENT has a non-empty delta',
    source: { kind: 'protocol', clause: SEED.delta },
    whole: false,
    holds: 'no empty delta',
    judge: (events) => {
      const i = events.findIndex(
        (e) => e.type === 'TEXT_MESSAGE_CONTENT' && (typeof e.delta !== 'string' || e.delta === ''),
      );
      return i < 0 ? undefined : describeEvent(events, i);
    },
  },
  {
    id: 'L1.tool-args-json',
    level: 1,
    title: "each ended tool call's TOOL_CALL_ARGS deltas concatenate to valid JSON",
    source: { kind: 'protocol', clause: SEED.args },
    whole: false,
    holds: 'the arguments of every tool call are JSON',
    judge: (events) => {
      for (const call of toolCalls(events).filter((c) => c.endIndex >= 0)) {
        try {
          JSON.parse(call.args);
        } catch {
          return `tool call ${call.toolCallId} (${call.name}): arguments ${brief(call.args)} are not JSON`;
        }
      }
      return undefined;
    },
  },
  {
    id: 'L1.ids-echoed',
    level: 1,
    title: "RUN_STARTED and RUN_FINISHED carry the request's threadId and runId",
    source: { kind: 'protocol', clause: SEED.ids },
    whole: false,
    holds: "RUN_STARTED and RUN_FINISHED carry the request's ids",
    judge: (events, input) => {
      if (!input) return undefined;
      const i = events.findIndex(
        (e) =>
          (e.type === 'RUN_STARTED' || e.type === 'RUN_FINISHED') &&
          (e.threadId !== input.threadId || e.runId !== input.runId),
      );
      return i < 0
        ? undefined
        : `${describeEvent(events, i)} where threadId ${input.threadId} and runId ${input.runId} were sent`;
    },
  },
  {
    id: 'L1.open-before-use',
    level: 1,
    title:
      'a text message, tool call, reasoning span or message, or step is continued and ended only while open, and not started again while open',
    source: { kind: 'ag-ui', clause: AG_UI_1.order },
    whole: false,
    holds: 'every event continues or ends something open, and none starts what is open',
    judge: (events) => {
      const open = new Set<string>();
      for (const [i, e] of events.entries()) {
        const span = e.type === 'RUN_STARTED' ? { name: 'the run', does: 'start' as const } : spanOf(e);
        if (isTerminal(e)) open.delete('the run');
        if (!span) continue;
        if (span.does === 'start' ? open.has(span.name) : !open.has(span.name))
          return `${describeEvent(events, i)}: ${span.name} ${span.does === 'start' ? 'is already open' : 'is not open'}`;
        if (span.does === 'start') open.add(span.name);
        if (span.does === 'end') open.delete(span.name);
      }
      return undefined;
    },
  },
  {
    id: 'L1.ag-ui-schema',
    level: 1,
    title: 'every event is valid against the AG-UI 1.0 event schema (@ag-ui/core EventSchema)',
    source: {
      kind: 'ag-ui',
      clause: 'the event types and fields of @ag-ui/core 1.0 (EventSchema)',
    },
    whole: false,
    holds: 'every event valid',
    judge: (events) => {
      for (const e of events) {
        const parsed = EventSchema.safeParse(e);
        if (!parsed.success) return `${e.type}: ${brief(parsed.error.message, 300)}`;
      }
      return undefined;
    },
  },
  {
    id: 'L1.pending-tool-calls',
    level: 1,
    title:
      'RUN_FINISHED outcome.pendingToolCallIds, when sent, names exactly the tool calls the run left without a result',
    source: { kind: 'ag-ui', clause: AG_UI_1.pending },
    whole: true,
    holds: 'every pendingToolCallIds sent names exactly the calls left without TOOL_CALL_RESULT',
    judge: (events) => {
      const pending = outcomeOf(events)?.pendingToolCallIds;
      if (pending === undefined) return undefined;
      if (!Array.isArray(pending)) return `pendingToolCallIds ${brief(pending)} is not a list`;
      const due = toolCalls(events)
        .filter((c) => c.results.length === 0)
        .map((c) => c.toolCallId);
      const same =
        new Set(pending).size === pending.length &&
        pending.length === due.length &&
        due.every((id) => pending.includes(id));
      return same
        ? undefined
        : `pendingToolCallIds [${pending.join(', ')}] where the run left [${due.join(', ')}] without a result: ${sequence(events)}`;
    },
  },
  {
    id: 'L1.interrupts',
    level: 1,
    title: 'an interrupt outcome names at least one interrupt, each with its own id and a reason',
    source: { kind: 'ag-ui', clause: AG_UI_1.interrupts },
    whole: true,
    holds: 'every interrupt outcome names its interrupts by distinct ids, with reasons',
    judge: (events) => {
      const outcome = outcomeOf(events);
      if (outcome?.type !== 'interrupt') return undefined;
      const list: any[] = Array.isArray(outcome.interrupts) ? outcome.interrupts : [];
      if (list.length === 0) return `an interrupt outcome with nothing to answer: ${brief(outcome)}`;
      const ids = list.map((i) => i?.id);
      if (ids.some((id) => typeof id !== 'string' || id === '') || new Set(ids).size !== ids.length)
        return `interrupt ids ${brief(ids)}: not distinct non-empty strings`;
      const noReason = list.find((i) => typeof i.reason !== 'string' || i.reason === '');
      return noReason ? `interrupt ${noReason.id} has no reason: ${brief(noReason)}` : undefined;
    },
  },
  {
    id: 'L1.usage-accounting',
    level: 1,
    title: 'usage on RUN_FINISHED or RUN_ERROR, when sent, adds up as AG-UI 1.0 counts tokens',
    source: { kind: 'ag-ui', clause: AG_UI_1.usage },
    whole: true,
    holds: 'every usage sent adds up',
    judge: (events) => {
      for (const end of terminals(events)) {
        if (end.usage === undefined) continue;
        if (!Array.isArray(end.usage)) return `${end.type} usage ${brief(end.usage)} is not a list`;
        for (const u of end.usage as Record<string, unknown>[]) {
          const n = (key: string) => (typeof u?.[key] === 'number' ? u[key] : undefined);
          const [input, output, total] = [n('inputTokens'), n('outputTokens'), n('totalTokens')];
          const wrong =
            input !== undefined && output !== undefined && total !== undefined && total !== input + output
              ? 'totalTokens is not inputTokens plus outputTokens'
              : (n('reasoningTokens') ?? 0) > (output ?? Infinity)
                ? 'reasoningTokens exceed outputTokens'
                : Math.max(n('cachedInputTokens') ?? 0, n('cacheWriteInputTokens') ?? 0) > (input ?? Infinity)
                  ? 'cached tokens exceed inputTokens'
                  : undefined;
          if (wrong) return `${end.type} usage ${brief(u)}: ${wrong}`;
        }
      }
      return undefined;
    },
  },
];

/** io-bridge's own stream rules (docs/protocol.md#the-stream), checked in the io-bridge profile only. */
export const IO_BRIDGE_STREAM_RULES: StreamRule[] = [
  {
    id: 'X1.versioned-fields',
    level: 1,
    title: 'a request without protocolVersion 1.x gets no outcome and no usage on its terminal event',
    source: {
      kind: 'io-bridge',
      clause:
        'what AG-UI 1.0 added (RUN_FINISHED.outcome with pendingToolCallIds, the cancelled and interrupt outcomes, usage) goes only to a request that declares RunAgentInput.protocolVersion 1.x; a request that declares none gets the pre-1.0 shapes',
    },
    whole: true,
    holds: 'requests that declare no 1.x version got the pre-1.0 shapes',
    judge: (events, input) => {
      if (!input || declares1x(input)) return undefined;
      const end = events.find((e) => isTerminal(e) && (e.outcome ?? e.usage));
      return end
        ? `protocolVersion ${brief(input.protocolVersion ?? 'none')}, and ${end.type} carries ${brief({ outcome: end.outcome, usage: end.usage })}`
        : undefined;
    },
  },
  {
    id: 'X1.timestamps',
    level: 1,
    title: 'every event carries an integer epoch-milliseconds timestamp',
    source: { kind: 'io-bridge', clause: 'every event carries timestamp as integer epoch milliseconds' },
    whole: false,
    holds: 'every event has an integer timestamp within a day of now',
    judge: (events) => {
      const i = events.findIndex(
        (e) => !Number.isInteger(e.timestamp) || Math.abs(e.timestamp - Date.now()) > DAY_MS,
      );
      return i < 0 ? undefined : `event ${i + 1} ${brief(events[i], 160)}`;
    },
  },
  {
    id: 'X1.no-null',
    level: 1,
    title: 'no event sends null for an optional field',
    source: { kind: 'io-bridge', clause: 'never send null for an optional field: leave it out' },
    whole: false,
    holds: 'no null anywhere',
    judge: (events) => {
      const hit = events.map((e, i) => nullAt(e, `event ${i + 1}`)).find(Boolean);
      return hit ? `null at ${hit}` : undefined;
    },
  },
  {
    id: 'X1.contract-events',
    level: 1,
    title: "uses only the contract's event types (REASONING_* where the model reasons)",
    source: {
      kind: 'io-bridge',
      clause: "events used: the protocol's subset, and REASONING_* where the model reasons",
    },
    whole: false,
    holds: "only the contract's event types",
    judge: (events) => {
      const other = events.filter((e) => !(e.type in CONTRACT_FIELDS));
      return other.length ? `also ${[...new Set(other.map((e) => e.type))].join(', ')}` : undefined;
    },
  },
  {
    id: 'X1.event-fields',
    level: 1,
    title:
      "every event has exactly its type's fields: ids and names non-empty strings, the role its type fixes, a known RUN_ERROR code, all JSON",
    source: {
      kind: 'io-bridge',
      clause:
        'each event type with its fields, names exactly as AG-UI (role assistant on text, tool on results, reasoning on reasoning messages); RUN_ERROR.code one of the run error codes',
    },
    whole: false,
    holds: "every event has exactly its type's fields",
    judge: (events) => {
      for (const [i, e] of events.entries()) {
        const fields = CONTRACT_FIELDS[e.type];
        if (!fields) continue;
        const { names, strings = [], optional = [], role } = fields;
        const known = new Set([
          'type',
          'timestamp',
          ...names,
          ...strings,
          ...optional,
          ...(role ? ['role'] : []),
        ]);
        const stray = Object.keys(e).find((key) => !known.has(key));
        const blank = names.find((key) => typeof e[key] !== 'string' || e[key] === '');
        const notText = strings.find((key) => typeof e[key] !== 'string');
        const wrong =
          stray !== undefined
            ? `unexpected field '${stray}'`
            : blank !== undefined
              ? `'${blank}' must be a non-empty string`
              : notText !== undefined
                ? `'${notText}' must be a string`
                : role !== undefined && e.role !== role
                  ? `role must be '${role}'`
                  : e.type === 'RUN_ERROR' && !(RUN_ERROR_CODES as readonly string[]).includes(e.code)
                    ? `unknown error code ${e.code}`
                    : !isDeepStrictEqual(JSON.parse(JSON.stringify(e)), e)
                      ? 'it does not survive a JSON round trip (an undefined or non-JSON value)'
                      : undefined;
        if (wrong) return `${describeEvent(events, i)}: ${wrong}`;
      }
      return undefined;
    },
  },
  {
    id: 'X1.unique-ids',
    level: 1,
    title:
      'within a run, each text message and tool result has a messageId of its own, each tool call a toolCallId',
    source: {
      kind: 'io-bridge',
      clause: 'a messageId names one message of the thread; a toolCallId one tool call',
    },
    whole: false,
    holds: 'no id names two messages or two tool calls',
    judge: (events) => {
      const messages = new Set<string>();
      const calls = new Set<string>();
      for (const [i, e] of events.entries()) {
        const seen =
          e.type === 'TOOL_CALL_START'
            ? calls
            : e.type === 'TEXT_MESSAGE_START' || e.type === 'TOOL_CALL_RESULT'
              ? messages
              : undefined;
        if (!seen) continue;
        const id = String(e.type === 'TOOL_CALL_START' ? e.toolCallId : e.messageId);
        if (seen.has(id)) return `${describeEvent(events, i)}: ${id} already names another of the run`;
        seen.add(id);
      }
      return undefined;
    },
  },
  {
    id: 'X1.reasoning-and-steps',
    level: 1,
    title:
      'a reasoning message comes within its reasoning span; every reasoning span, reasoning message and step is ended before the terminal event',
    source: {
      kind: 'io-bridge',
      clause:
        'every text message, reasoning message, tool call and step is closed before the terminal event, on an error too; REASONING_MESSAGE_START/CONTENT/END within REASONING_START and REASONING_END',
    },
    whole: false,
    holds: 'reasoning and steps open and close in order',
    judge: (events) => {
      const open = new Set<string>();
      for (const [i, e] of events.entries()) {
        if (e.type === 'REASONING_MESSAGE_START' && !open.has(`reasoning ${e.messageId}`))
          return `${describeEvent(events, i)}: outside REASONING_START and REASONING_END`;
        if (e.type === 'REASONING_END' && open.has(`reasoning message ${e.messageId}`))
          return `${describeEvent(events, i)}: before its REASONING_MESSAGE_END`;
        if (isTerminal(e) && open.size)
          return `${[...open].join(', ')} not ended before the terminal ${e.type} (event ${i + 1})`;
        const span = spanOf(e);
        if (!span || span.kind === 'text message' || span.kind === 'tool call') continue;
        if (span.does === 'start') open.add(span.name);
        if (span.does === 'end') open.delete(span.name);
      }
      return undefined;
    },
  },
  {
    id: 'X1.tool-args-object',
    level: 1,
    title: "each ended tool call's TOOL_CALL_ARGS deltas concatenate to a JSON object",
    source: {
      kind: 'io-bridge',
      clause:
        'tool arguments that concatenate to a JSON object (a model’s invalid arguments are repaired, or replaced by {})',
    },
    whole: false,
    holds: 'the arguments of every tool call are a JSON object',
    judge: (events) => {
      for (const call of toolCalls(events).filter((c) => c.endIndex >= 0)) {
        let args: unknown;
        try {
          args = JSON.parse(call.args);
        } catch {
          continue; // not JSON at all: L1.tool-args-json's finding
        }
        if (typeof args !== 'object' || args === null || Array.isArray(args))
          return `tool call ${call.toolCallId} (${call.name}): arguments ${brief(call.args)} are not a JSON object`;
      }
      return undefined;
    },
  },
  {
    id: 'X2.parent-message-id',
    level: 2,
    title: 'TOOL_CALL_START.parentMessageId names the assistant message of the step',
    source: {
      kind: 'io-bridge',
      clause: 'TOOL_CALL_START.parentMessageId names the assistant message of that step',
    },
    whole: false,
    holds: 'every TOOL_CALL_START names its assistant message',
    judge: (events) => {
      const i = events.findIndex(
        (e) =>
          e.type === 'TOOL_CALL_START' &&
          (typeof e.parentMessageId !== 'string' || !/\S/.test(e.parentMessageId)),
      );
      return i < 0 ? undefined : describeEvent(events, i);
    },
  },
  {
    id: 'X2.tool-results',
    level: 2,
    title:
      "a TOOL_CALL_RESULT comes once per call, after the call's TOOL_CALL_END, for a call of the run (or one a resume answers)",
    source: {
      kind: 'io-bridge',
      clause:
        "a tool call's RESULT after its END, one per call; a run that resumes interrupts may carry the result of an earlier run's approved call",
    },
    whole: false,
    holds: 'every TOOL_CALL_RESULT answers an ended call of the run, once',
    judge: (events, input) => {
      const resumes = Array.isArray(input?.resume) && input.resume.length > 0;
      const started = new Set<string>();
      const ended = new Set<string>();
      const answered = new Set<string>();
      for (const [i, e] of events.entries()) {
        if (e.type === 'TOOL_CALL_START') started.add(e.toolCallId);
        if (e.type === 'TOOL_CALL_END') ended.add(e.toolCallId);
        if (e.type !== 'TOOL_CALL_RESULT') continue;
        const wrong = answered.has(e.toolCallId)
          ? `a second TOOL_CALL_RESULT for ${e.toolCallId}`
          : !started.has(e.toolCallId)
            ? resumes
              ? undefined
              : 'for a tool call the run never started'
            : !ended.has(e.toolCallId)
              ? 'before its TOOL_CALL_END'
              : undefined;
        if (wrong) return `${describeEvent(events, i)}: ${wrong}`;
        answered.add(e.toolCallId);
      }
      return undefined;
    },
  },
];

const EVERY_RULE = [...PROTOCOL_STREAM_RULES, ...IO_BRIDGE_STREAM_RULES];

/** io-bridge's SSE ids (X1.event-ids): each event's seq, counting from 1. What breaks that, or undefined. */
export function eventIdsFinding(ids: readonly (string | number | undefined)[]): string | undefined {
  return ids.every((id, i) => String(id) === String(i + 1))
    ? undefined
    : `ids ${brief(ids.join(','), 120)}, where 1…${ids.length} were due`;
}

export type StreamFacts = {
  /** The run input the stream answers; without it, the rules on the input hold. */
  input?: RunInput;
  /** The SSE id of each event, for a stream of io-bridge's: judged by X1.event-ids. */
  ids?: readonly (string | number | undefined)[];
  /** False for a stream cut short: only the rules that hold on a part of a stream judge it. */
  ended?: boolean;
};

export type Violation = { rule: string; finding: string };

/** Every stream rule, protocol's and io-bridge's, that `events` break: the rule's check id and what broke it. */
export function streamViolations(events: readonly Event[], facts: StreamFacts = {}): Violation[] {
  const list = [...events];
  const found: Violation[] = [];
  for (const rule of EVERY_RULE) {
    if (rule.whole && facts.ended === false) continue;
    const finding = rule.judge(list, facts.input);
    if (finding !== undefined) found.push({ rule: rule.id, finding });
  }
  const ids = facts.ids && eventIdsFinding(facts.ids);
  if (ids) found.push({ rule: 'X1.event-ids', finding: ids });
  return found;
}

const runTag = (s: RunStream) => `${s.label} run …${s.input.runId.slice(-6)}`;

/**
 * A stream rule as a check of the kit: judged on every stream the kit read, once all other checks ran.
 * Streams the kit cut short (a tool call it never answered) are judged only by rules with `whole: false`.
 */
export function streamRule(rule: StreamRule): Check {
  const { whole, judge, holds, ...rest } = rule;
  return {
    ...rest,
    final: true,
    run: (ctx) => {
      const streams = ctx.client.runs.filter((s) => s.res.status === 200 && (!whole || s.ended()));
      must(streams.length > 0, 'no stream to judge: every POST /run of the kit was refused or cut short');
      const broken = streams
        .map((s) => [s, judge(s.events, s.input)] as const)
        .filter(([, finding]) => finding !== undefined)
        .map(([s, finding]) => `${runTag(s)}: ${finding}`);
      must(
        broken.length === 0,
        [...broken.slice(0, 3), ...(broken.length > 3 ? [`and ${broken.length - 3} more streams`] : [])].join(
          '\n',
        ),
      );
      const events = streams.reduce((n, s) => n + s.events.length, 0);
      return Promise.resolve(`${streams.length} streams, ${events} events: ${holds}`);
    },
  };
}
