import { AguiEvent } from '../../protocol/agui-events';
import { THREAD, RUN, checkStream } from './run-lifecycle.spec-support';

// ---------------------------------------------------------------------------------------------------
// The checker itself must catch what it claims to catch.
// ---------------------------------------------------------------------------------------------------

describe('checkStream (the test oracle)', () => {
  // Now, not a fixed instant: X1.timestamps refuses a timestamp more than a day from now.
  const t = Date.now();
  const S = { type: 'RUN_STARTED', timestamp: t, threadId: THREAD, runId: RUN } as AguiEvent;
  const F = { type: 'RUN_FINISHED', timestamp: t, threadId: THREAD, runId: RUN } as AguiEvent;
  const ev = (e: Record<string, unknown>) => ({ timestamp: t, ...e }) as unknown as AguiEvent;

  it('accepts a well-formed run', () => {
    expect(() =>
      checkStream([
        S,
        ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }),
        ev({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' }),
        ev({ type: 'TEXT_MESSAGE_END', messageId: 'm' }),
        ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: 'm' }),
        ev({ type: 'TOOL_CALL_ARGS', toolCallId: 'c', delta: '{"a":' }),
        ev({ type: 'TOOL_CALL_ARGS', toolCallId: 'c', delta: '1}' }),
        ev({ type: 'TOOL_CALL_END', toolCallId: 'c' }),
        ev({ type: 'TOOL_CALL_RESULT', messageId: 'r', toolCallId: 'c', content: '', role: 'tool' }),
        F,
      ]),
    ).not.toThrow();
  });

  it.each([
    ['no RUN_STARTED', [F], /L1\.run-started-first: the first event is RUN_FINISHED/],
    ['RUN_STARTED twice', [S, S, F], /L1\.open-before-use: event 2 .*: the run is already open/],
    [
      'no terminal',
      [S, ev({ type: 'STEP_STARTED', stepName: 's' })],
      /L1\.one-terminal-last: no terminal event/,
    ],
    ['two terminals', [S, F, F], /L1\.one-terminal-last: event 3 .* comes after the terminal/],
    [
      'an event after the terminal',
      [S, F, ev({ type: 'STEP_STARTED', stepName: 's' })],
      /L1\.one-terminal-last: event 3 .* comes after the terminal/,
    ],
    [
      'an unclosed text',
      [S, ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }), F],
      /L1\.text-messages-closed: message m never ended/,
    ],
    [
      'content without start',
      [S, ev({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' }), F],
      /L1\.open-before-use: event 2 .*: text message m is not open/,
    ],
    [
      'an empty delta',
      [
        S,
        ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }),
        ev({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: '' }),
        ev({ type: 'TEXT_MESSAGE_END', messageId: 'm' }),
        F,
      ],
      /L1\.non-empty-delta: event 3 /,
    ],
    [
      'a message id started twice',
      [
        S,
        ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }),
        ev({ type: 'TEXT_MESSAGE_END', messageId: 'm' }),
        ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }),
        ev({ type: 'TEXT_MESSAGE_END', messageId: 'm' }),
        F,
      ],
      /X1\.unique-ids: event 4 .*: m already names another/,
    ],
    [
      'args that are not an object',
      [
        S,
        ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: 'm' }),
        ev({ type: 'TOOL_CALL_ARGS', toolCallId: 'c', delta: '[1]' }),
        ev({ type: 'TOOL_CALL_END', toolCallId: 'c' }),
        F,
      ],
      /X1\.tool-args-object: tool call c \(f\): arguments \[1\] are not a JSON object/,
    ],
    [
      'an empty parentMessageId',
      [S, ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: '' }), F],
      /X2\.parent-message-id: event 2 /,
    ],
    [
      'a result before END',
      [
        S,
        ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: 'm' }),
        ev({ type: 'TOOL_CALL_RESULT', messageId: 'r', toolCallId: 'c', content: 'x', role: 'tool' }),
        F,
      ],
      /X2\.tool-results: event 3 .*: before its TOOL_CALL_END/,
    ],
    [
      'an unbalanced step',
      [S, ev({ type: 'STEP_FINISHED', stepName: 's' }), F],
      /L1\.open-before-use: event 2 .*: step s is not open/,
    ],
    ['a float timestamp', [S, { ...F, timestamp: 1.5 }], /X1\.timestamps: event 2 /],
    [
      'a null field',
      [S, { ...F, result: null } as unknown as AguiEvent],
      /X1\.no-null: null at event 2\.result/,
    ],
    [
      'an undefined field',
      [S, { ...F, result: undefined } as unknown as AguiEvent],
      /X1\.event-fields: event 2 .*: it does not survive a JSON round trip/,
    ],
    [
      'a stray field',
      [S, { ...F, extra: 1 } as unknown as AguiEvent],
      /X1\.event-fields: event 2 .*: unexpected field 'extra'/,
    ],
    [
      'an unknown error code',
      [S, ev({ type: 'RUN_ERROR', message: 'x', code: 'OOPS' })],
      /X1\.event-fields: event 2 .*: unknown error code OOPS/,
    ],
    [
      'a step left open',
      [S, ev({ type: 'STEP_STARTED', stepName: 's' }), F],
      /X1\.reasoning-and-steps: step s not ended before the terminal RUN_FINISHED/,
    ],
    [
      'a reasoning message outside its reasoning span',
      [
        S,
        ev({ type: 'REASONING_MESSAGE_START', messageId: 'r', role: 'reasoning' }),
        ev({ type: 'REASONING_MESSAGE_END', messageId: 'r' }),
        F,
      ],
      /X1\.reasoning-and-steps: event 2 .*: outside REASONING_START and REASONING_END/,
    ],
    [
      'a result for a call never started',
      [S, ev({ type: 'TOOL_CALL_RESULT', messageId: 'r', toolCallId: 'c', content: 'x', role: 'tool' }), F],
      /X2\.tool-results: event 2 .*: for a tool call the run never started/,
    ],
  ])('refuses %s', (_label, events, rule) => {
    expect(() => checkStream(events)).toThrow(rule);
  });
});

// ---------------------------------------------------------------------------------------------------
// Property: any upstream sequence, any ending, gives a well-formed stream.
// ---------------------------------------------------------------------------------------------------
