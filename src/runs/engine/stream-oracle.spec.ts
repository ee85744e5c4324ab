import { AguiEvent } from '../../protocol/agui-events';
import { THREAD, RUN, checkStream } from './run-lifecycle.spec-support';

// ---------------------------------------------------------------------------------------------------
// The checker itself must catch what it claims to catch.
// ---------------------------------------------------------------------------------------------------

describe('checkStream (the test oracle)', () => {
  const t = 1_700_000_000_000;
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
    ['no RUN_STARTED', [F], /at least/],
    ['RUN_STARTED twice', [S, S, F], /first and only once/],
    ['no terminal', [S, ev({ type: 'STEP_STARTED', stepName: 's' })], /last event must be/],
    ['two terminals', [S, F, F], /nothing may follow/],
    [
      'an event after the terminal',
      [S, F, ev({ type: 'STEP_STARTED', stepName: 's' })],
      /nothing may follow/,
    ],
    [
      'an unclosed text',
      [S, ev({ type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant' }), F],
      /not closed/,
    ],
    [
      'content without start',
      [S, ev({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' }), F],
      /not open/,
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
      /'delta' must not be empty/,
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
      /started twice/,
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
      /not a JSON object/,
    ],
    [
      'an empty parentMessageId',
      [S, ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: '' }), F],
      /'parentMessageId' must not be empty/,
    ],
    [
      'a result before END',
      [
        S,
        ev({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f', parentMessageId: 'm' }),
        ev({ type: 'TOOL_CALL_RESULT', messageId: 'r', toolCallId: 'c', content: 'x', role: 'tool' }),
        F,
      ],
      /before its TOOL_CALL_END/,
    ],
    ['an unbalanced step', [S, ev({ type: 'STEP_FINISHED', stepName: 's' }), F], /not open/],
    ['a float timestamp', [S, { ...F, timestamp: 1.5 }], /integer/],
    ['a null field', [S, { ...F, result: null } as unknown as AguiEvent], /null or undefined/],
    ['an undefined field', [S, { ...F, result: undefined } as unknown as AguiEvent], /null or undefined/],
    ['a stray field', [S, { ...F, extra: 1 } as unknown as AguiEvent], /unexpected field 'extra'/],
    [
      'an unknown error code',
      [S, ev({ type: 'RUN_ERROR', message: 'x', code: 'OOPS' })],
      /unknown error code/,
    ],
  ])('refuses %s', (_label, events, rule) => {
    expect(() => checkStream(events)).toThrow(rule);
  });
});

// ---------------------------------------------------------------------------------------------------
// Property: any upstream sequence, any ending, gives a well-formed stream.
// ---------------------------------------------------------------------------------------------------
