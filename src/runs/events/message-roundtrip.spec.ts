import { AbstractAgent, defaultApplyEvents, verifyEvents } from '@ag-ui/client';
import type { BaseEvent, Message, RunAgentInput } from '@ag-ui/core';
import fc from 'fast-check';
import { from } from 'rxjs';
import { AguiEvent, UpstreamEvent } from '../../protocol/agui-events';
import { RunLifecycle } from './run-lifecycle';
import { aguiToModelMessages, ModelMessage } from '../../threads/agui-to-model';
import { MessageCollector } from '../../threads/message-collector';
import { StoredMessage, toUiMessages } from '../../threads/message-format';

const THREAD = 'thread-rt';
const RUN = 'run-rt';

// ---------------------------------------------------------------------------------------------------
// The AG-UI client: what a frontend rebuilds from the events.
// ---------------------------------------------------------------------------------------------------

/** The client bundles its own rxjs copy: its Observable type is not ours, though it behaves the same. */
type ClientObservable = ReturnType<AbstractAgent['run']>;
const clientObservable = (events: readonly AguiEvent[]): ClientObservable =>
  from(events as unknown as BaseEvent[]) as unknown as ClientObservable;

class ReplayAgent extends AbstractAgent {
  constructor(private readonly events: readonly AguiEvent[]) {
    super({ threadId: THREAD });
  }

  run(): ClientObservable {
    return clientObservable(this.events);
  }
}

/**
 * The messages the official client holds after `events`: its own verification, then its default
 * apply, exactly as `runAgent` chains them (rejects if the client refuses the stream).
 */
async function clientMessages(events: readonly AguiEvent[]): Promise<Message[]> {
  const agent = new ReplayAgent(events);
  const input: RunAgentInput = {
    threadId: THREAD,
    runId: RUN,
    messages: [],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  };
  let messages: Message[] = [];
  await new Promise<void>((resolve, reject) => {
    defaultApplyEvents(input, verifyEvents()(clientObservable(events)), agent, []).subscribe({
      next: (mutation) => {
        if (mutation.messages) messages = mutation.messages;
      },
      error: reject,
      complete: () => resolve(),
    });
  });
  return messages;
}

// ---------------------------------------------------------------------------------------------------
// A run as the lifecycle emits it, observed by the collector as RunExecution does.
// ---------------------------------------------------------------------------------------------------

type Played = {
  events: AguiEvent[];
  /** produced(true) taken right before the terminal event, as RunExecution stores a failed run. */
  beforeTerminal: StoredMessage[] | undefined;
  /** The text message open when the run failed, if any. */
  openAtFailure: string | undefined;
  /** Tool calls started but not ended when the run failed. */
  callsOpenAtFailure: Set<string>;
  /** produced() after the terminal event. */
  produced: StoredMessage[];
};

function play(upstream: UpstreamEvent[], failing: boolean): Played {
  const events: AguiEvent[] = [];
  const collector = new MessageCollector();
  let n = 0;
  let openText: string | undefined;
  const openCalls = new Set<string>();
  const lifecycle = new RunLifecycle({
    threadId: THREAD,
    runId: RUN,
    emit: (event) => {
      events.push(event);
      collector.observe(event);
      if (event.type === 'TEXT_MESSAGE_START') openText = event.messageId;
      if (event.type === 'TEXT_MESSAGE_END') openText = undefined;
      if (event.type === 'TOOL_CALL_START') openCalls.add(event.toolCallId);
      if (event.type === 'TOOL_CALL_END') openCalls.delete(event.toolCallId);
    },
    newId: () => `gen-${++n}`,
  });
  for (const event of upstream) lifecycle.push(event);
  let beforeTerminal: StoredMessage[] | undefined;
  const openAtFailure = openText;
  const callsOpenAtFailure = new Set(openCalls);
  if (failing) {
    const open = collector.openTextIds();
    lifecycle.closeOpen();
    beforeTerminal = collector.produced(open);
    lifecycle.fail('MODEL_ERROR', 'The model failed');
  } else {
    lifecycle.finish();
  }
  return {
    events,
    beforeTerminal,
    openAtFailure: failing ? openAtFailure : undefined,
    callsOpenAtFailure: failing ? callsOpenAtFailure : new Set(),
    produced: collector.produced(),
  };
}

const of = <T extends AguiEvent['type']>(events: readonly AguiEvent[], type: T) =>
  events.filter((e): e is Extract<AguiEvent, { type: T }> => e.type === type);

const parsedOr = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

// ---------------------------------------------------------------------------------------------------
// Generated runs: steps with reasoning, text, tool calls and results, as Mastra → MastraToAgui sends them.
// ---------------------------------------------------------------------------------------------------

type ResultSpec =
  { kind: 'text'; value: string } | { kind: 'json'; value: unknown } | { kind: 'error'; message: string };
type CallSpec = {
  name: string;
  args: Record<string, unknown>;
  cuts: number[];
  streamed: boolean;
  result: ResultSpec | undefined;
  order: number;
};
type StepSpec = {
  reasoning: string[] | undefined;
  text: string[] | undefined;
  textAfterCalls: boolean;
  calls: CallSpec[];
};
type RunSpec = { steps: StepSpec[]; ending: { kind: 'finish' } | { kind: 'fail'; cut: number | undefined } };

const delta = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 3 }),
  fc.constantFrom('', ' ', '\n', '{"a":1}', 'null', '"'),
);
const deltas = fc.array(delta, { maxLength: 5 });
const resultSpec: fc.Arbitrary<ResultSpec> = fc.oneof(
  fc.record({
    kind: fc.constant('text' as const),
    value: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('', '42', 'null', '{"cut', 'plain answer')),
  }),
  fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ kind: fc.constant('error' as const), message: fc.string({ minLength: 1, maxLength: 10 }) }),
);
const callSpec: fc.Arbitrary<CallSpec> = fc.record({
  name: fc.constantFrom('search', 'add', 'weather', 'confirm'),
  args: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), {
    maxKeys: 3,
    noNullPrototype: true,
  }),
  cuts: fc.array(fc.nat(), { maxLength: 4 }),
  streamed: fc.boolean(),
  result: fc.option(resultSpec, { nil: undefined, freq: 5 }),
  order: fc.nat({ max: 9 }),
});
const stepSpec: fc.Arbitrary<StepSpec> = fc.record({
  reasoning: fc.option(deltas, { nil: undefined, freq: 2 }),
  text: fc.option(deltas, { nil: undefined, freq: 3 }),
  textAfterCalls: fc.boolean(),
  calls: fc.array(callSpec, { maxLength: 3 }),
});
const runSpec: fc.Arbitrary<RunSpec> = fc.record({
  steps: fc.array(stepSpec, { minLength: 1, maxLength: 4 }),
  ending: fc.oneof(
    { arbitrary: fc.constant({ kind: 'finish' as const }), weight: 2 },
    {
      arbitrary: fc.record({
        kind: fc.constant('fail' as const),
        cut: fc.option(fc.nat(), { nil: undefined }),
      }),
      weight: 1,
    },
  ),
});

const messageIdOf = (s: number) => `msg-${s + 1}`;
const reasoningIdOf = (s: number) => `msg-${s + 1}-reasoning-`;
const callIdOf = (s: number, i: number) => `call-${s + 1}-${i + 1}`;

function resultContent(result: ResultSpec): unknown {
  if (result.kind === 'text') return result.value;
  if (result.kind === 'json') return result.value;
  return { error: result.message };
}

/** A JSON text cut into deltas at random places. */
function fragments(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((start, k) => text.slice(start, [...at, text.length][k]));
}

/** Results in the order they come back (`order`, ties in call order). */
const resultOrder = (step: StepSpec) =>
  step.calls.map((call, i) => ({ call, i })).sort((a, b) => a.call.order - b.call.order || a.i - b.i);

function upstreamOf(spec: RunSpec): UpstreamEvent[] {
  const out: UpstreamEvent[] = [];
  spec.steps.forEach((step, s) => {
    const messageId = messageIdOf(s);
    out.push({ type: 'STEP_STARTED', stepName: `step-${s + 1}` });
    if (step.reasoning) {
      const id = reasoningIdOf(s);
      out.push({ type: 'REASONING_MESSAGE_START', messageId: id });
      for (const d of step.reasoning)
        out.push({ type: 'REASONING_MESSAGE_CONTENT', messageId: id, delta: d });
      out.push({ type: 'REASONING_MESSAGE_END', messageId: id });
    }
    const text: UpstreamEvent[] = step.text
      ? [
          { type: 'TEXT_MESSAGE_START', messageId },
          ...step.text.map((d): UpstreamEvent => ({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta: d })),
          { type: 'TEXT_MESSAGE_END', messageId },
        ]
      : [];
    if (!step.textAfterCalls) out.push(...text);
    step.calls.forEach((call, i) => {
      const toolCallId = callIdOf(s, i);
      out.push({ type: 'TOOL_CALL_START', toolCallId, toolCallName: call.name, parentMessageId: messageId });
      if (call.streamed) {
        for (const d of fragments(JSON.stringify(call.args), call.cuts)) {
          out.push({ type: 'TOOL_CALL_ARGS', toolCallId, delta: d });
        }
      }
      // As MastraToAgui: END carries the parsed arguments (all a non-streaming model gives).
      out.push({ type: 'TOOL_CALL_END', toolCallId, args: call.args });
    });
    if (step.textAfterCalls) out.push(...text);
    for (const { call, i } of resultOrder(step)) {
      if (call.result) {
        out.push({
          type: 'TOOL_CALL_RESULT',
          toolCallId: callIdOf(s, i),
          content: resultContent(call.result),
        });
      }
    }
    out.push({ type: 'STEP_FINISHED', stepName: `step-${s + 1}` });
  });
  return out;
}

/** What a complete run must store, straight from the generated spec (tool result ids: gen-1, gen-2, …). */
function expectedMessages(spec: RunSpec): StoredMessage[] {
  const out: StoredMessage[] = [];
  let n = 0;
  spec.steps.forEach((step, s) => {
    if (step.reasoning)
      out.push({ id: reasoningIdOf(s), role: 'reasoning', content: step.reasoning.join('') });
    const text = (step.text ?? []).join('');
    if (text || step.calls.length) {
      out.push({
        id: messageIdOf(s),
        role: 'assistant',
        ...(text ? { content: text } : {}),
        ...(step.calls.length
          ? {
              toolCalls: step.calls.map((call, i) => ({
                id: callIdOf(s, i),
                type: 'function' as const,
                function: { name: call.name, arguments: JSON.stringify(call.args) },
              })),
            }
          : {}),
      });
    }
    for (const { call, i } of resultOrder(step)) {
      if (!call.result) continue;
      const content = resultContent(call.result);
      out.push({
        id: `gen-${++n}`,
        role: 'tool',
        toolCallId: callIdOf(s, i),
        content: typeof content === 'string' ? content : JSON.stringify(content ?? null),
      });
    }
  });
  return out;
}

function playSpec(spec: RunSpec): Played {
  const upstream = upstreamOf(spec);
  if (spec.ending.kind === 'finish') return play(upstream, false);
  const cut = spec.ending.cut === undefined ? upstream.length : spec.ending.cut % (upstream.length + 1);
  return play(upstream.slice(0, cut), true);
}

/** Ids, roles, content and tool calls; an assistant message with neither text nor calls is nothing. */
function comparable(messages: ReadonlyArray<Message | StoredMessage>) {
  return messages
    .map((m) => {
      const message = m as StoredMessage;
      const content = message.role === 'assistant' && message.content === '' ? undefined : message.content;
      const toolCalls = message.toolCalls?.length
        ? message.toolCalls.map((c) => ({
            id: c.id,
            type: c.type,
            function: { name: c.function.name, arguments: c.function.arguments },
          }))
        : undefined;
      return {
        id: message.id,
        role: message.role,
        ...(content !== undefined ? { content } : {}),
        ...(toolCalls ? { toolCalls } : {}),
        ...(message.toolCallId !== undefined ? { toolCallId: message.toolCallId } : {}),
      };
    })
    .filter((m) => m.role !== 'assistant' || 'content' in m || 'toolCalls' in m);
}

// ---------------------------------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------------------------------

const NUM_RUNS = 300;

describe('round trip: lifecycle events → MessageCollector → model / ui / AG-UI client', () => {
  it('a complete run stores exactly the generated steps: reasoning, assistant(text, toolCalls), tool results', () => {
    fc.assert(
      fc.property(
        runSpec.map((spec) => ({ ...spec, ending: { kind: 'finish' as const } })),
        (spec) => {
          const { produced } = playSpec(spec);
          expect(produced).toEqual(expectedMessages(spec));
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  it('model messages: every tool result directly follows an assistant message calling that id and name', () => {
    fc.assert(
      fc.property(runSpec, (spec) => {
        const { events, produced } = playSpec(spec);
        const model: ModelMessage[] = aguiToModelMessages(produced);
        const starts = of(events, 'TOOL_CALL_START');
        const results = of(events, 'TOOL_CALL_RESULT');
        const nameOf = new Map(starts.map((e) => [e.toolCallId, e.toolCallName]));
        const argsOf = new Map<string, string>();
        for (const e of of(events, 'TOOL_CALL_ARGS'))
          argsOf.set(e.toolCallId, (argsOf.get(e.toolCallId) ?? '') + e.delta);

        let resultParts = 0;
        model.forEach((message, i) => {
          if (message.role !== 'tool') return;
          const previous = model[i - 1];
          expect(previous?.role).toBe('assistant');
          const calls = (previous as Extract<ModelMessage, { role: 'assistant' }>).content.filter(
            (p) => p.type === 'tool-call',
          );
          for (const part of message.content) {
            resultParts++;
            expect(calls).toContainEqual(
              expect.objectContaining({ toolCallId: part.toolCallId, toolName: part.toolName }),
            );
            expect(part.toolName).toBe(nameOf.get(part.toolCallId));
            const content = results.find((r) => r.toolCallId === part.toolCallId)!.content;
            expect(part.output).toEqual(
              isJson(content)
                ? { type: 'json', value: JSON.parse(content) }
                : { type: 'text', value: content },
            );
          }
        });
        expect(resultParts).toBe(results.length);

        // Every call reaches the model once, in the order it started, with the arguments sent.
        const callParts = model.flatMap((m) =>
          m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call') : [],
        );
        expect(callParts.map((p) => p.toolCallId)).toEqual(starts.map((e) => e.toolCallId));
        for (const part of callParts) {
          expect(part.toolName).toBe(nameOf.get(part.toolCallId));
          expect(part.input).toEqual(JSON.parse(argsOf.get(part.toolCallId)!));
        }
        // Reasoning never reaches the model.
        expect(model.some((m) => (m.role as string) === 'reasoning')).toBe(false);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("ui messages: one tool-invocation part per tool call, state 'result' iff its result exists", () => {
    fc.assert(
      fc.property(runSpec, (spec) => {
        const { events, produced } = playSpec(spec);
        const t0 = Date.UTC(2025, 5, 1);
        const ui = toUiMessages(
          THREAD,
          produced.map((body, i) => ({ body, createdAt: new Date(t0 + i * 1000) })),
        );
        expect(ui.map((m) => m.id)).toEqual(produced.filter((m) => m.role !== 'tool').map((m) => m.id));
        expect(ui.every((m) => m.threadId === THREAD && m.content.format === 2)).toBe(true);

        const invocations = ui.flatMap((m) =>
          m.content.parts.flatMap((p) =>
            p.type === 'tool-invocation' ? [{ message: m.id, ...p.toolInvocation }] : [],
          ),
        );
        const starts = of(events, 'TOOL_CALL_START');
        const results = new Map(of(events, 'TOOL_CALL_RESULT').map((e) => [e.toolCallId, e.content]));
        const argsOf = new Map<string, string>();
        for (const e of of(events, 'TOOL_CALL_ARGS')) {
          argsOf.set(e.toolCallId, (argsOf.get(e.toolCallId) ?? '') + e.delta);
        }
        expect(invocations).toHaveLength(starts.length);
        for (const start of starts) {
          const mine = invocations.filter((p) => p.toolCallId === start.toolCallId);
          expect(mine).toHaveLength(1);
          const [part] = mine;
          expect(part.message).toBe(start.parentMessageId);
          expect(part.toolName).toBe(start.toolCallName);
          expect(part.args).toEqual(JSON.parse(argsOf.get(start.toolCallId)!));
          const content = results.get(start.toolCallId);
          if (content === undefined) {
            expect(part.state).toBe('call');
            expect(part).not.toHaveProperty('result');
          } else {
            expect(part.state).toBe('result');
            expect(part.result).toEqual(parsedOr(content));
          }
        }
        // Each assistant message starts with step-start, and its text is what was streamed to it.
        for (const m of ui.filter((u) => u.role === 'assistant')) {
          expect(m.content.parts[0]).toEqual({ type: 'step-start' });
          const streamed = of(events, 'TEXT_MESSAGE_CONTENT')
            .filter((e) => e.messageId === m.id)
            .map((e) => e.delta)
            .join('');
          const texts = m.content.parts.filter((p) => p.type === 'text').map((p) => p.text);
          expect(texts).toEqual(streamed ? [streamed] : []);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('the AG-UI client rebuilds the same messages (ids, roles, content, toolCalls) as produced()', async () => {
    await fc.assert(
      fc.asyncProperty(runSpec, async (spec) => {
        const { events, produced } = playSpec(spec);
        const client = await clientMessages(events);
        expect(comparable(client)).toEqual(comparable(produced));
        // The normalisation only forgives what it says: nothing is dropped from the collector's side.
        expect(comparable(produced)).toHaveLength(produced.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('a failed run: produced(true) before the terminal event marks exactly the open text message', () => {
    fc.assert(
      fc.property(
        runSpec.filter((s) => s.ending.kind === 'fail'),
        (spec) => {
          const played = playSpec(spec);
          const before = played.beforeTerminal!;
          const marked = before.filter((m) => m.metadata !== undefined);
          for (const m of marked) expect(m.metadata).toEqual({ interrupted: true });
          const open = played.openAtFailure;
          const openProduced = open !== undefined && before.some((m) => m.id === open);
          expect(marked.map((m) => m.id)).toEqual(openProduced ? [open] : []);
          // Apart from that mark, what is stored is what the client ends up with, except the arguments
          // of a call cut mid-stream (see the failing example below).
          const strip = (messages: StoredMessage[]) =>
            messages.map(({ metadata: _metadata, ...m }) => ({
              ...m,
              ...(m.toolCalls
                ? {
                    toolCalls: m.toolCalls.map((c) =>
                      played.callsOpenAtFailure.has(c.id)
                        ? { ...c, function: { ...c.function, arguments: '?' } }
                        : c,
                    ),
                  }
                : {}),
            }));
          expect(strip(before)).toEqual(strip(played.produced));
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------------------------------

describe('round trip examples', () => {
  it('a two-step tool run: stored, model, ui and client views agree', async () => {
    const { events, produced } = play(
      [
        { type: 'STEP_STARTED', stepName: 'step-1' },
        { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Checking ' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'the weather.' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather', parentMessageId: 'm1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '"Oslo"}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: { temp: 3 } },
        { type: 'STEP_FINISHED', stepName: 'step-1' },
        { type: 'STEP_STARTED', stepName: 'step-2' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm2', delta: 'It is 3 degrees.' },
        { type: 'STEP_FINISHED', stepName: 'step-2' },
      ],
      false,
    );
    const stored: StoredMessage[] = [
      {
        id: 'm1',
        role: 'assistant',
        content: 'Checking the weather.',
        toolCalls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { id: 'gen-1', role: 'tool', toolCallId: 'c1', content: '{"temp":3}' },
      { id: 'm2', role: 'assistant', content: 'It is 3 degrees.' },
    ];
    expect(produced).toEqual(stored);
    expect(await clientMessages(events)).toEqual([
      { ...stored[0] },
      { id: 'gen-1', role: 'tool', toolCallId: 'c1', content: '{"temp":3}' },
      { id: 'm2', role: 'assistant', content: 'It is 3 degrees.' },
    ]);
    expect(aguiToModelMessages(produced)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking the weather.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Oslo' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'weather',
            output: { type: 'json', value: { temp: 3 } },
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'It is 3 degrees.' }] },
    ]);
    const ui = toUiMessages(
      THREAD,
      produced.map((body) => ({ body, createdAt: new Date('2025-01-01T00:00:00.000Z') })),
    );
    expect(ui.map((m) => [m.id, m.content.parts])).toEqual([
      [
        'm1',
        [
          { type: 'step-start' },
          { type: 'text', text: 'Checking the weather.' },
          {
            type: 'tool-invocation',
            toolInvocation: {
              state: 'result',
              toolCallId: 'c1',
              toolName: 'weather',
              args: { city: 'Oslo' },
              result: { temp: 3 },
            },
          },
        ],
      ],
      ['m2', [{ type: 'step-start' }, { type: 'text', text: 'It is 3 degrees.' }]],
    ]);
  });

  it('a run failing mid-text: the text so far is stored, marked interrupted', () => {
    const played = play(
      [
        { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Half a ' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'sent' },
      ],
      true,
    );
    expect(played.beforeTerminal).toEqual([
      { id: 'm1', role: 'assistant', content: 'Half a sent', metadata: { interrupted: true } },
    ]);
    expect(of(played.events, 'TEXT_MESSAGE_END').map((e) => e.messageId)).toEqual(['m1']);
  });

  const cutMidArguments = (): Played =>
    play(
      [
        { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Looking up' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather', parentMessageId: 'm1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":"Par' },
      ],
      true,
    );

  it('a call cut mid-arguments: the client is shown the repaired arguments when the run fails', async () => {
    const played = cutMidArguments();
    expect(await clientMessages(played.events)).toEqual([
      {
        id: 'm1',
        role: 'assistant',
        content: 'Looking up',
        toolCalls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Par"}' } },
        ],
      },
    ]);
    expect(played.produced[0].toolCalls![0].function.arguments).toBe('{"city":"Par"}');
  });

  // Regression: a call cut mid-arguments was once stored with '{}' while the client was shown the repaired arguments.
  it('a call cut mid-arguments is stored (produced before the terminal) as the client was shown it', () => {
    const played = cutMidArguments();
    expect(played.beforeTerminal![0].toolCalls).toEqual([
      { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Par"}' } },
    ]);
  });
});
