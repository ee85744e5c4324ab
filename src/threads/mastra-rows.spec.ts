import { messagesOf, placeMessages, rowId, uiMessagesOf } from './mastra-rows';
import { StoredMessage } from './message-format';

const call = (id: string, name = 'weather', args = '{"city":"Paris"}') => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

/** A placed row as Mastra's memory would hand it back. */
const stored = (row: { id: string; role: string; content: string }) => ({ ...row, createdAt: new Date(0) });

describe('placeMessages', () => {
  it('makes a row of each message, the tool result part of the row of its call, and reads them back exactly', () => {
    const messages: StoredMessage[] = [
      { id: 'u1', role: 'user', content: 'Weather in Paris?' },
      { id: 'a1', role: 'assistant', content: 'Let me look.', toolCalls: [call('c1')] },
      { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"temp":20}' },
      { id: 'a2', role: 'assistant', content: 'It is 20 degrees.' },
    ];
    const placed = placeMessages('thread-1', messages);
    expect(placed.rows.map((r) => [r.id, r.role])).toEqual([
      [rowId('thread-1', 'u1'), 'user'],
      [rowId('thread-1', 'a1'), 'assistant'],
      [rowId('thread-1', 'a2'), 'assistant'],
    ]);
    expect(JSON.parse(placed.rows[1].content).parts).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Let me look.' },
      {
        type: 'tool-invocation',
        toolInvocation: {
          state: 'result',
          toolCallId: 'c1',
          toolName: 'weather',
          args: { city: 'Paris' },
          result: { temp: 20 },
        },
      },
    ]);
    expect(placed.answers).toEqual([
      expect.objectContaining({ toolCallId: 'c1', row: rowId('thread-1', 'a1'), needle: '"c1"' }),
    ]);
    expect(placed.answers[0].orphan).toBeUndefined();
    expect(placed.slots).toBe(3);
    expect(placed.rows.map(stored).flatMap(messagesOf)).toEqual(messages);
  });

  it('marks each assistant row with Mastra’s response boundary, and no other', () => {
    const placed = placeMessages('thread-1', [
      { id: 'u1', role: 'user', content: 'Hi' },
      { id: 'a1', role: 'assistant', toolCalls: [call('c1')] },
      { id: 's1', role: 'system', content: 'Be brief.' },
    ]);
    expect(placed.rows.map((r) => JSON.parse(r.content).metadata.mastra)).toEqual([
      undefined,
      { responseBoundary: true },
      undefined,
    ]);
  });

  it('gives a message the same row id in its thread every time, and another in another thread', () => {
    expect(rowId('thread-1', 'm1')).toBe(rowId('thread-1', 'm1'));
    expect(rowId('thread-1', 'm1')).not.toBe(rowId('thread-2', 'm1'));
    // The two ids are not run together: no other split of the same characters names the same row.
    expect(rowId('a', 'bc')).not.toBe(rowId('ab', 'c'));
  });

  it('leaves a result whose call is not among the messages to the thread, with a row of its own if it has none', () => {
    const placed = placeMessages('thread-1', [{ id: 't9', role: 'tool', toolCallId: 'c9', content: 'done' }]);
    expect(placed.rows).toEqual([]);
    expect(placed.answers).toEqual([
      expect.objectContaining({ toolCallId: 'c9', row: null, result: 'done', needle: '"c9"' }),
    ]);
    const orphan = placed.answers[0].orphan!;
    expect(orphan).toMatchObject({ id: rowId('thread-1', 't9'), role: 'assistant' });
    expect(JSON.parse(orphan.content).parts).toEqual([]);
    expect(messagesOf(stored(orphan))).toEqual([
      { id: 't9', role: 'tool', toolCallId: 'c9', content: 'done' },
    ]);
    expect(placed.slots).toBe(1);
  });

  it("gives the model's parts of each role: developer as system, reasoning and activity none, media as files", () => {
    const placed = placeMessages('thread-1', [
      { id: 'd1', role: 'developer', content: 'Be brief.' },
      { id: 'r1', role: 'reasoning', content: 'thinking' },
      { id: 'x1', role: 'activity', activityType: 'progress', content: { step: 1 } },
      {
        id: 'u1',
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          {
            type: 'image',
            source: { type: 'url', value: 'https://example.com/a.png', mimeType: 'image/png' },
          },
          { type: 'document', source: { type: 'file', value: 'file-123' } },
        ],
      },
      { id: 'f1', role: 'tool', toolCallId: 'c1', content: 'x', error: 'It broke' },
    ]);
    const parts = placed.rows.map((r) => [r.role, JSON.parse(r.content).parts]);
    expect(parts).toEqual([
      ['system', [{ type: 'text', text: 'Be brief.' }]],
      ['assistant', []],
      ['assistant', []],
      [
        'user',
        [
          { type: 'text', text: 'Look' },
          { type: 'file', data: 'https://example.com/a.png', mimeType: 'image/png' },
        ],
      ],
    ]);
    expect(placed.answers[0].result).toEqual({ error: 'It broke' });
  });

  it('reads a row Mastra wrote by its parts, and lists a placed row in the ui format with its result on the call', () => {
    const foreign = {
      id: 'mastra-1',
      role: 'assistant',
      content: JSON.stringify({ format: 2, parts: [{ type: 'text', text: 'Hello' }] }),
      createdAt: new Date(0),
    };
    expect(messagesOf(foreign)).toEqual([{ id: 'mastra-1', role: 'assistant', content: 'Hello' }]);
    const [row] = placeMessages('thread-1', [
      { id: 'a1', role: 'assistant', toolCalls: [call('c1')] },
      { id: 't1', role: 'tool', toolCallId: 'c1', content: '"sunny"' },
    ]).rows;
    expect(uiMessagesOf('thread-1', stored(row))).toEqual([
      {
        id: 'a1',
        threadId: 'thread-1',
        role: 'assistant',
        createdAt: new Date(0).toISOString(),
        content: {
          format: 2,
          parts: [
            { type: 'step-start' },
            {
              type: 'tool-invocation',
              toolInvocation: {
                state: 'result',
                toolCallId: 'c1',
                toolName: 'weather',
                args: { city: 'Paris' },
                result: 'sunny',
              },
            },
          ],
        },
      },
    ]);
  });
});
