import { aguiOf, MastraRow, uiOf } from './mastra-format';

const at = new Date('2026-12-06T10:00:00.000Z');
const row = (role: string, content: unknown, id = 'm1'): MastraRow => ({
  id,
  role,
  content: typeof content === 'string' ? content : JSON.stringify(content),
  createdAt: at,
});
const call = (toolCallId: string, state: string, extra: Record<string, unknown> = {}) => ({
  type: 'tool-invocation',
  toolInvocation: { state, toolCallId, toolName: 'lookup', args: { q: toolCallId }, ...extra },
});

describe('aguiOf: a message of Mastra’s memory as AG-UI messages', () => {
  it('reads a user and a system message as their text', () => {
    const parts = [
      { type: 'text', text: 'Hello ' },
      { type: 'file', data: 'x', mimeType: 'image/png' },
      { type: 'text', text: 'there' },
    ];
    expect(aguiOf(row('user', { format: 2, parts }))).toEqual([
      { id: 'm1', role: 'user', content: 'Hello there' },
    ]);
    expect(aguiOf(row('system', { format: 2, parts: [{ type: 'text', text: 'Be brief.' }] }))).toEqual([
      { id: 'm1', role: 'system', content: 'Be brief.' },
    ]);
  });

  it('reads a role AG-UI has no name for (`signal`) as a user message', () => {
    expect(aguiOf(row('signal', { format: 2, parts: [{ type: 'text', text: 'ping' }] }))).toEqual([
      { id: 'm1', role: 'user', content: 'ping' },
    ]);
  });

  it('reads an older row whose content is bare text, or text without parts', () => {
    expect(aguiOf(row('user', 'plain words'))).toEqual([{ id: 'm1', role: 'user', content: 'plain words' }]);
    expect(aguiOf(row('assistant', JSON.stringify('quoted')))).toEqual([
      { id: 'm1', role: 'assistant', content: 'quoted' },
    ]);
    expect(aguiOf(row('assistant', { format: 2, content: 'legacy' }))).toEqual([
      { id: 'm1', role: 'assistant', content: 'legacy' },
    ]);
  });

  it('splits an assistant message into steps: text and calls, then each answered call’s result', () => {
    const parts = [
      { type: 'step-start' },
      { type: 'text', text: 'Looking.' },
      call('c1', 'result', { result: { found: 1 } }),
      call('c2', 'result', { result: 'plain' }),
      { type: 'step-start' },
      { type: 'reasoning', reasoning: 'hm' },
      { type: 'text', text: 'Found ' },
      { type: 'text', text: 'one.' },
      call('c3', 'call'),
    ];
    expect(aguiOf(row('assistant', { format: 2, parts }))).toEqual([
      {
        id: 'm1',
        role: 'assistant',
        content: 'Looking.',
        toolCalls: [
          { id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":"c1"}' } },
          { id: 'c2', type: 'function', function: { name: 'lookup', arguments: '{"q":"c2"}' } },
        ],
      },
      { id: 'm1:c1', role: 'tool', toolCallId: 'c1', content: '{"found":1}' },
      { id: 'm1:c2', role: 'tool', toolCallId: 'c2', content: 'plain' },
      {
        id: 'm1:1',
        role: 'assistant',
        content: 'Found one.',
        toolCalls: [{ id: 'c3', type: 'function', function: { name: 'lookup', arguments: '{"q":"c3"}' } }],
      },
    ]);
  });

  it('gives a failed call its error, and an assistant message without parts an empty text', () => {
    const parts = [call('c1', 'output-error', { errorText: 'timed out' })];
    expect(aguiOf(row('assistant', { format: 2, parts }))).toEqual([
      expect.objectContaining({ id: 'm1', role: 'assistant' }),
      { id: 'm1:c1', role: 'tool', toolCallId: 'c1', content: 'timed out', error: 'timed out' },
    ]);
    expect(aguiOf(row('assistant', { format: 2, parts: [] }))).toEqual([
      { id: 'm1', role: 'assistant', content: '' },
    ]);
  });
});

describe('uiOf: a message of Mastra’s memory in the `ui` format', () => {
  it('keeps text, step starts and tool invocations (`result` once answered), and drops other parts', () => {
    const parts = [
      { type: 'step-start' },
      { type: 'reasoning', reasoning: 'hm' },
      call('c1', 'result', { result: { ok: true } }),
      call('c2', 'call'),
      call('c3', 'output-error', { errorText: 'no' }),
      { type: 'text', text: 'Done.' },
    ];
    expect(uiOf('t1', row('assistant', { format: 2, parts }))).toEqual({
      id: 'm1',
      threadId: 't1',
      role: 'assistant',
      createdAt: '2026-12-06T10:00:00.000Z',
      content: {
        format: 2,
        parts: [
          { type: 'step-start' },
          {
            type: 'tool-invocation',
            toolInvocation: {
              state: 'result',
              toolCallId: 'c1',
              toolName: 'lookup',
              args: { q: 'c1' },
              result: { ok: true },
            },
          },
          {
            type: 'tool-invocation',
            toolInvocation: { state: 'call', toolCallId: 'c2', toolName: 'lookup', args: { q: 'c2' } },
          },
          {
            type: 'tool-invocation',
            toolInvocation: {
              state: 'result',
              toolCallId: 'c3',
              toolName: 'lookup',
              args: { q: 'c3' },
              result: { error: 'no' },
            },
          },
          { type: 'text', text: 'Done.' },
        ],
      },
    });
  });
});
