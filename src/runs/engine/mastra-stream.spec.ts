import { Agent } from '@mastra/core/agent';
import { noopLogger } from '@mastra/core/logger';
import { createTool } from '@mastra/core/tools';
import { lastValueFrom, tap } from 'rxjs';
import { z } from 'zod';
import { ScriptedModel } from '../../agents/scripted-model';
import { AguiEvent } from '../../protocol/agui-events';
import { MastraRunner } from './mastra-runner';
import { Outcome, translate } from '../events/mastra-to-agui';
import { guardLifecycle, Stopped, Terminal } from '../events/lifecycle-guard';
import {
  THREAD,
  RUN,
  checkStream,
  clientVerifies,
  clientMessages,
  harness,
  bare,
  of,
} from '../events/run-lifecycle.spec-support';

describe('a real Mastra agent with the scripted model, through MastraRunner, translate() and guardLifecycle()', () => {
  const add = createTool({
    id: 'add',
    description: 'Adds one to a',
    inputSchema: z.object({ a: z.number() }),
    execute: ({ a }) => Promise.resolve({ sum: a + 1 }),
  });
  const broken = createTool({
    id: 'broken',
    description: 'Always fails',
    inputSchema: z.object({}),
    execute: () => Promise.reject(new Error('no such city\n    at secret (/srv/tool.js:1:1)')),
  });
  const agent = new Agent({
    id: 'test-agent',
    name: 'Test agent',
    instructions: 'You are a test agent.',
    model: new ScriptedModel(),
    tools: { add, broken },
  });
  // The model error of /error is expected; Mastra would log it to the console.
  agent.__setLogger(noopLogger);

  const runner = new MastraRunner();

  /** How RunExecution decides the end from what stopped the stream. */
  function decide({ outcome, failure }: Stopped, signal: AbortSignal): Terminal {
    if (signal.aborted) return { code: 'CANCELLED', message: 'The run was cancelled' };
    if (failure !== undefined) return { code: 'INTERNAL', message: 'The run failed unexpectedly' };
    if (outcome?.kind === 'finished') return {};
    if (outcome?.kind === 'error') return { code: 'MODEL_ERROR', message: outcome.message };
    if (outcome?.kind === 'aborted') return { code: 'CANCELLED', message: 'The run was cancelled' };
    return { code: 'MODEL_ERROR', message: 'The model stream ended unexpectedly' };
  }

  /** Streams `prompt` through the service's pipeline: MastraRunner → translate() → guardLifecycle(). */
  async function stream(prompt: string, abortAfterFirstDelta = false) {
    const h = harness();
    const controller = new AbortController();
    let outcome: Outcome | undefined;
    let failure: unknown;
    await lastValueFrom(
      runner.stream(agent, prompt, { options: { maxSteps: 5 }, signal: controller.signal }).pipe(
        translate(),
        guardLifecycle({
          threadId: THREAD,
          runId: RUN,
          warn: (message) => h.warnings.push(message),
          end: async (stopped, closeOpen) => {
            ({ outcome, failure } = stopped);
            const terminal = decide(stopped, controller.signal);
            // As RunExecution does: a failed run's open messages are closed before it is recorded.
            if ('code' in terminal) closeOpen();
            await Promise.resolve();
            return terminal;
          },
        }),
        tap((event) => {
          h.events.push(event);
          if (abortAfterFirstDelta && event.type === 'TEXT_MESSAGE_CONTENT') controller.abort();
        }),
      ),
      { defaultValue: undefined },
    );
    checkStream(h.events);
    await clientVerifies(h.events);
    return { ...h, outcome, failure };
  }

  const textOf = (events: readonly AguiEvent[]) =>
    of(events, 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('');

  it('plain text: "You said: hello world" in word deltas, one message, one step', async () => {
    const { events, outcome } = await stream('hello world');
    expect(outcome).toEqual({ kind: 'finished' });
    expect(textOf(events)).toBe('You said: hello world');
    expect(of(events, 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThanOrEqual(3);
    expect(of(events, 'TEXT_MESSAGE_START')).toHaveLength(1);
    expect(bare(of(events, 'STEP_STARTED'))).toEqual([{ type: 'STEP_STARTED', stepName: 'step-1' }]);
    expect(events[events.length - 1].type).toBe('RUN_FINISHED');
    const messageId = of(events, 'TEXT_MESSAGE_START')[0].messageId;
    expect(await clientMessages(events)).toEqual([
      { id: messageId, role: 'assistant', content: 'You said: hello world' },
    ]);
  });

  it('/reason: the reasoning is streamed and closed before the text', async () => {
    const { events, outcome } = await stream('/reason think');
    expect(outcome).toEqual({ kind: 'finished' });
    expect(
      of(events, 'REASONING_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Thinking about: think');
    expect(textOf(events)).toBe('think');
    const types = events.map((e) => e.type);
    expect(types.indexOf('REASONING_END')).toBeLessThan(types.indexOf('TEXT_MESSAGE_START'));
    expect(types.indexOf('REASONING_START')).toBeGreaterThan(types.indexOf('STEP_STARTED'));
  });

  it('/error boom: an error outcome with message "boom", the partial text closed before RUN_ERROR', async () => {
    const { events, outcome } = await stream('/error boom');
    expect(outcome).toEqual({ kind: 'error', message: 'boom' });
    expect(textOf(events)).toBe('Working on it');
    expect(bare(events.slice(-3))).toEqual([
      { type: 'TEXT_MESSAGE_END', messageId: of(events, 'TEXT_MESSAGE_START')[0].messageId },
      { type: 'STEP_FINISHED', stepName: 'step-1' },
      { type: 'RUN_ERROR', message: 'boom', code: 'MODEL_ERROR' },
    ]);
  });

  it('/bench 50: fifty "x " deltas in one message, handed over in one event-loop turn: the first at once, the rest as one', async () => {
    const { events, outcome } = await stream('/bench 50');
    expect(outcome).toEqual({ kind: 'finished' });
    const deltas = of(events, 'TEXT_MESSAGE_CONTENT');
    expect(deltas.map((e) => e.delta)).toEqual(['x ', 'x '.repeat(49)]);
    expect(of(events, 'TEXT_MESSAGE_START')).toHaveLength(1);
  });

  it('/tool add: call, result and answer; the client rebuilds assistant(toolCalls) → tool → assistant(text)', async () => {
    const { events, outcome } = await stream('/tool add {"a":1}');
    expect(outcome).toEqual({ kind: 'finished' });
    const [start] = of(events, 'TOOL_CALL_START');
    expect(start).toMatchObject({ toolCallName: 'add' });
    expect(bare(of(events, 'TOOL_CALL_ARGS'))).toEqual([
      { type: 'TOOL_CALL_ARGS', toolCallId: start.toolCallId, delta: '{"a":1}' },
    ]);
    const [result] = of(events, 'TOOL_CALL_RESULT');
    expect(result).toMatchObject({ toolCallId: start.toolCallId, content: '{"sum":2}', role: 'tool' });
    expect(textOf(events)).toBe('Tool add returned {"sum":2}');
    const answer = of(events, 'TEXT_MESSAGE_START')[0].messageId;
    expect(answer).not.toBe(start.parentMessageId);
    expect(of(events, 'STEP_STARTED').map((e) => e.stepName)).toEqual(['step-1', 'step-2']);

    expect(await clientMessages(events)).toEqual([
      {
        id: start.parentMessageId,
        role: 'assistant',
        toolCalls: [
          { id: start.toolCallId, type: 'function', function: { name: 'add', arguments: '{"a":1}' } },
        ],
      },
      { id: result.messageId, role: 'tool', toolCallId: start.toolCallId, content: '{"sum":2}' },
      { id: answer, role: 'assistant', content: 'Tool add returned {"sum":2}' },
    ]);
  });

  it('two /tool lines: two calls of one step share its parentMessageId, each gets its result', async () => {
    const { events } = await stream('/tool add {"a":1}\n/tool add {"a":5}');
    const starts = of(events, 'TOOL_CALL_START');
    expect(starts).toHaveLength(2);
    expect(starts[0].parentMessageId).toBe(starts[1].parentMessageId);
    expect(of(events, 'TOOL_CALL_RESULT').map((e) => [e.toolCallId, e.content])).toEqual([
      [starts[0].toolCallId, '{"sum":2}'],
      [starts[1].toolCallId, '{"sum":6}'],
    ]);
    expect(textOf(events)).toBe('Tool add returned {"sum":2}\nTool add returned {"sum":6}');
    const [assistant] = await clientMessages(events);
    expect(assistant).toMatchObject({ id: starts[0].parentMessageId, role: 'assistant' });
    expect((assistant as { toolCalls: unknown[] }).toolCalls).toHaveLength(2);
  });

  it('a tool that throws: its result carries the first line of the error, and the run goes on', async () => {
    const { events, outcome } = await stream('/tool broken {}');
    expect(outcome).toEqual({ kind: 'finished' });
    expect(of(events, 'TOOL_CALL_RESULT').map((e) => JSON.parse(e.content))).toEqual([
      { error: 'no such city' },
    ]);
    expect(textOf(events)).toMatch(/^Tool broken returned "no such city/);
  });

  it('a call to a tool the agent does not have still gives a well-formed stream', async () => {
    const { events } = await stream('/tool missing {"x":1}');
    expect(of(events, 'TOOL_CALL_START').map((e) => e.toolCallName)).toEqual(['missing']);
  });

  it('an abort mid-text ends the run with CANCELLED, the open text closed first', async () => {
    const { events, outcome } = await stream('/slow 20 one two three four', true);
    expect(outcome?.kind).not.toBe('finished');
    expect(bare(events.slice(-3))).toEqual([
      { type: 'TEXT_MESSAGE_END', messageId: of(events, 'TEXT_MESSAGE_START')[0].messageId },
      { type: 'STEP_FINISHED', stepName: 'step-1' },
      { type: 'RUN_ERROR', message: 'The run was cancelled', code: 'CANCELLED' },
    ]);
    expect(textOf(events).startsWith('You ')).toBe(true);
    expect(textOf(events)).not.toBe('You said: one two three four');
  });
});
