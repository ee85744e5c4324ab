import { AguiToolCall, StoredMessage, textOf, titleFrom, toStored, toUiMessages } from './message-format';

const THREAD = 'thread-ui';
const call = (id: string, name: string, args: string): AguiToolCall => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const user = (id: string, content: unknown): StoredMessage => ({ id, role: 'user', content });
/** Rows as the repository returns them: createdAt one second apart, in order. */
const rows = (...bodies: StoredMessage[]) =>
  bodies.map((body, i) => ({ body, createdAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5 + i, 6)) }));
/** The parts of the one UI message with this id. */
const partsOf = (messages: ReturnType<typeof toUiMessages>, id: string) => {
  const found = messages.filter((m) => m.id === id);
  expect(found).toHaveLength(1);
  return found[0].content.parts;
};

describe('toStored', () => {
  it('keeps every known field of a full message', () => {
    const message = {
      id: 'a1',
      role: 'assistant',
      content: 'hi',
      name: 'bot',
      toolCalls: [call('c1', 'search', '{"q":"x"}')],
      toolCallId: 't1',
      error: 'bad',
      activityType: 'PLAN',
      encryptedValue: 'enc',
      metadata: { k: 1 },
    };
    expect(toStored(message)).toEqual(message);
  });

  it('drops fields AG-UI does not define', () => {
    const stored = toStored({
      id: 'u1',
      role: 'user',
      content: 'hello',
      extra: 'x',
      threadId: 'thread-1',
      subagentRunId: 'r1',
    });
    expect(stored).toEqual({ id: 'u1', role: 'user', content: 'hello' });
    expect(Object.keys(stored).sort()).toEqual(['content', 'id', 'role']);
  });

  it('leaves out null and undefined values: the key is absent, not null', () => {
    const stored = toStored({
      id: 'a1',
      role: 'assistant',
      content: null,
      name: undefined,
      toolCalls: null,
      toolCallId: undefined,
      error: null,
      activityType: null,
      encryptedValue: undefined,
      metadata: null,
    });
    expect(stored).toEqual({ id: 'a1', role: 'assistant' });
    expect(Object.keys(stored).sort()).toEqual(['id', 'role']);
  });

  it('keeps falsy values that are not null or undefined', () => {
    const stored = toStored({ id: 't1', role: 'tool', content: '', toolCallId: 'c1', error: '' });
    expect(stored).toEqual({ id: 't1', role: 'tool', content: '', toolCallId: 'c1', error: '' });
  });

  it('keeps multimodal content as it is', () => {
    const content = [
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } },
    ];
    expect(toStored({ id: 'u1', role: 'user', content }).content).toEqual(content);
  });

  it('makes tool calls plain objects with only id, type and function {name, arguments}', () => {
    class FunctionCallLike {
      constructor(
        public name: string,
        public arguments_: string,
      ) {}
      get arguments(): string {
        return this.arguments_;
      }
      extraField = 'no';
    }
    class ToolCallLike {
      type = 'function';
      encryptedValue = 'enc';
      constructor(
        public id: string,
        public function_: FunctionCallLike,
      ) {}
      get function(): FunctionCallLike {
        return this.function_;
      }
    }
    const input = [new ToolCallLike('c1', new FunctionCallLike('search', '{"q":1}'))];
    const stored = toStored({ id: 'a1', role: 'assistant', toolCalls: input });

    expect(stored.toolCalls).toEqual([call('c1', 'search', '{"q":1}')]);
    const [plain] = stored.toolCalls!;
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(plain.function)).toBe(Object.prototype);
    expect(Object.keys(plain).sort()).toEqual(['function', 'id', 'type']);
    expect(Object.keys(plain.function).sort()).toEqual(['arguments', 'name']);
  });

  it('copies tool calls: changing the input afterwards does not change what is stored', () => {
    const input = [call('c1', 'search', '{}'), call('c2', 'add', '{"a":1}')];
    const stored = toStored({ id: 'a1', role: 'assistant', toolCalls: input });
    input[0].function.arguments = 'changed';
    input[1].id = 'changed';
    expect(stored.toolCalls).toEqual([call('c1', 'search', '{}'), call('c2', 'add', '{"a":1}')]);
    expect(stored.toolCalls![0]).not.toBe(input[0]);
  });

  it('keeps an empty tool call list', () => {
    expect(toStored({ id: 'a1', role: 'assistant', toolCalls: [] })).toEqual({
      id: 'a1',
      role: 'assistant',
      toolCalls: [],
    });
  });
});

describe('textOf', () => {
  it('returns string content as it is', () => {
    expect(textOf('hello\nworld ')).toBe('hello\nworld ');
    expect(textOf('')).toBe('');
  });

  it('joins the text parts of a part list with newlines, skipping other parts', () => {
    expect(
      textOf([
        { type: 'text', text: 'one' },
        { type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } },
        { type: 'text', text: 'two' },
      ]),
    ).toBe('one\ntwo');
  });

  it('tolerates null entries in a part list', () => {
    expect(textOf([null, { type: 'text', text: 'only' }])).toBe('only');
  });

  it('returns empty text for anything else', () => {
    expect(textOf(undefined)).toBe('');
    expect(textOf(null)).toBe('');
    expect(textOf(42)).toBe('');
    expect(textOf({ text: 'not a list' })).toBe('');
    expect(textOf([])).toBe('');
    expect(textOf([{ type: 'image', source: { type: 'data', value: 'AA==' } }])).toBe('');
  });
});

describe('titleFrom', () => {
  it('uses the first user message, not an earlier system or assistant message', () => {
    expect(
      titleFrom([
        { id: 's', role: 'system', content: 'You are helpful' },
        { id: 'a', role: 'assistant', content: 'Hi there' },
        user('u1', 'Plan my trip'),
        user('u2', 'Second question'),
      ]),
    ).toBe('Plan my trip');
  });

  it('takes the first line only, trimmed', () => {
    expect(titleFrom([user('u1', '  \n  First line here  \nsecond line')])).toBe('First line here');
    expect(titleFrom([user('u1', 'Windows line\r\nnext')])).toBe('Windows line');
  });

  it('keeps a line of exactly 80 characters whole', () => {
    const line = 'x'.repeat(80);
    expect(titleFrom([user('u1', line)])).toBe(line);
  });

  it('cuts a longer line to 80 characters ending with an ellipsis', () => {
    const line = 'abcdefghij'.repeat(9); // 90 characters
    const title = titleFrom([user('u1', line)])!;
    expect(title).toBe(`${line.slice(0, 79)}…`);
    expect(title).toHaveLength(80);
    expect(title.endsWith('…')).toBe(true);
    expect(titleFrom([user('u1', 'y'.repeat(81))])).toBe(`${'y'.repeat(79)}…`);
  });

  it('counts only the first line towards the limit', () => {
    expect(titleFrom([user('u1', `short\n${'z'.repeat(200)}`)])).toBe('short');
  });

  it('is undefined without a user message, or when its text is blank', () => {
    expect(titleFrom([])).toBeUndefined();
    expect(titleFrom([{ id: 'a', role: 'assistant', content: 'hello' }])).toBeUndefined();
    expect(titleFrom([user('u1', '   \n\t\n')])).toBeUndefined();
    expect(titleFrom([user('u1', '')])).toBeUndefined();
  });

  it('does not look past the first user message when it has no text', () => {
    expect(
      titleFrom([
        user('u1', [{ type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } }]),
        user('u2', 'later text'),
      ]),
    ).toBeUndefined();
  });

  it('uses the text parts of multimodal content', () => {
    expect(
      titleFrom([
        user('u1', [
          { type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } },
          { type: 'text', text: 'What is in this picture?' },
          { type: 'text', text: 'Be brief.' },
        ]),
      ]),
    ).toBe('What is in this picture?');
  });

  it('skips a blank leading text part of multimodal content', () => {
    expect(
      titleFrom([
        user('u1', [
          { type: 'text', text: '   ' },
          { type: 'text', text: 'Describe the chart' },
        ]),
      ]),
    ).toBe('Describe the chart');
  });

  // Regression: the cut counts UTF-16 code units, so an emoji (a surrogate pair) across position 79 is split
  // and the title ends with a lone high surrogate before the ellipsis (not well-formed Unicode; it
  // becomes U+FFFD once encoded as UTF-8 for Postgres). Fix: cut on code points, e.g.
  // `const chars = [...line]; return chars.length > 80 ? `${chars.slice(0, 79).join('')}…` : line;`.
  it('never splits a surrogate pair (emoji) at the cut', () => {
    const line = `${'a'.repeat(78)}😀😀 and more text`;
    const title = titleFrom([user('u1', line)])!;
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(title)).toBe(false);
    expect(title).toBe(`${'a'.repeat(78)}😀…`);
  });
});

describe('toUiMessages', () => {
  it('returns nothing for no rows', () => {
    expect(toUiMessages(THREAD, [])).toEqual([]);
  });

  it('a user message: a text part, the thread id, createdAt as ISO-8601, format 2', () => {
    const createdAt = new Date('2025-03-04T05:06:07.089Z');
    expect(toUiMessages(THREAD, [{ body: user('u1', 'hello'), createdAt }])).toEqual([
      {
        id: 'u1',
        threadId: THREAD,
        role: 'user',
        createdAt: '2025-03-04T05:06:07.089Z',
        content: { format: 2, parts: [{ type: 'text', text: 'hello' }] },
      },
    ]);
  });

  it('an assistant message starts with a step-start part, then its text', () => {
    const [message] = toUiMessages(THREAD, rows({ id: 'a1', role: 'assistant', content: 'Hi!' }));
    expect(message.content.parts).toEqual([{ type: 'step-start' }, { type: 'text', text: 'Hi!' }]);
    expect(message.role).toBe('assistant');
  });

  it('a user message gets no step-start part', () => {
    const [message] = toUiMessages(THREAD, rows(user('u1', 'hello')));
    expect(message.content.parts.some((p) => p.type === 'step-start')).toBe(false);
  });

  it('multimodal user content shows its text parts as one text part', () => {
    const [message] = toUiMessages(
      THREAD,
      rows(
        user('u1', [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'url', value: 'https://example.com/a.png' } },
          { type: 'text', text: 'here' },
        ]),
      ),
    );
    expect(message.content.parts).toEqual([{ type: 'text', text: 'look\nhere' }]);
  });

  it('no text part for empty text', () => {
    const ui = toUiMessages(THREAD, rows(user('u1', ''), { id: 'a1', role: 'assistant', content: '' }));
    expect(ui.map((m) => m.content.parts)).toEqual([[], [{ type: 'step-start' }]]);
  });

  it('an unanswered tool call is a tool-invocation part in state call, with parsed args and no result', () => {
    const ui = toUiMessages(
      THREAD,
      rows({ id: 'a1', role: 'assistant', toolCalls: [call('c1', 'search', '{"q":"cats","n":2}')] }),
    );
    const parts = partsOf(ui, 'a1');
    expect(parts).toEqual([
      { type: 'step-start' },
      {
        type: 'tool-invocation',
        toolInvocation: { state: 'call', toolCallId: 'c1', toolName: 'search', args: { q: 'cats', n: 2 } },
      },
    ]);
    expect((parts[1] as { toolInvocation: object }).toolInvocation).not.toHaveProperty('result');
  });

  it('arguments that are not JSON become {} as args', () => {
    const ui = toUiMessages(
      THREAD,
      rows({ id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{"cut'), call('c2', 'y', '')] }),
    );
    const args = partsOf(ui, 'a1')
      .filter((p) => p.type === 'tool-invocation')
      .map((p) => p.toolInvocation.args);
    expect(args).toEqual([{}, {}]);
  });

  it('a call answered in the rows is one part in state result; the tool message is not listed', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        user('u1', 'weather?'),
        {
          id: 'a1',
          role: 'assistant',
          content: 'Checking',
          toolCalls: [call('c1', 'weather', '{"city":"Oslo"}')],
        },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"temp":3,"unit":"C"}' },
        { id: 'a2', role: 'assistant', content: 'It is 3 C.' },
      ),
    );
    expect(ui.map((m) => [m.id, m.role])).toEqual([
      ['u1', 'user'],
      ['a1', 'assistant'],
      ['a2', 'assistant'],
    ]);
    expect(partsOf(ui, 'a1')).toEqual([
      { type: 'step-start' },
      { type: 'text', text: 'Checking' },
      {
        type: 'tool-invocation',
        toolInvocation: {
          state: 'result',
          toolCallId: 'c1',
          toolName: 'weather',
          args: { city: 'Oslo' },
          result: { temp: 3, unit: 'C' },
        },
      },
    ]);
  });

  it('a result found in the tool message before its call (any order in the rows) still counts', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '"done"' },
        { id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{}')] },
      ),
    );
    expect(ui.map((m) => m.id)).toEqual(['a1']);
    expect(partsOf(ui, 'a1')[1]).toMatchObject({ toolInvocation: { state: 'result', result: 'done' } });
  });

  it('a result from laterResults (stored on a newer page) completes the call', () => {
    const ui = toUiMessages(
      THREAD,
      rows({ id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{}'), call('c2', 'y', '{}')] }),
      [{ body: { id: 't2', role: 'tool', toolCallId: 'c2', content: '[1,2]' } }],
    );
    expect(ui.map((m) => m.id)).toEqual(['a1']);
    expect(
      partsOf(ui, 'a1')
        .filter((p) => p.type === 'tool-invocation')
        .map((p) => p.toolInvocation),
    ).toEqual([
      { state: 'call', toolCallId: 'c1', toolName: 'x', args: {} },
      { state: 'result', toolCallId: 'c2', toolName: 'y', args: {}, result: [1, 2] },
    ]);
  });

  it('laterResults are never listed as messages themselves', () => {
    const ui = toUiMessages(THREAD, rows(user('u1', 'hi')), [
      { body: { id: 't9', role: 'tool', toolCallId: 'c9', content: '1' } },
    ]);
    expect(ui.map((m) => m.id)).toEqual(['u1']);
  });

  it('tool result content: JSON text is parsed, plain text kept as it is', () => {
    const results = [
      ['{"a":[1,{"b":null}]}', { a: [1, { b: null }] }],
      ['42', 42],
      ['true', true],
      ['null', null],
      ['"quoted"', 'quoted'],
      ['plain text answer', 'plain text answer'],
      ['{"cut', '{"cut'],
      ['', ''],
    ] as const;
    const calls = results.map((_, i) => call(`c${i}`, 'tool', '{}'));
    const tools: StoredMessage[] = results.map(([content], i) => ({
      id: `t${i}`,
      role: 'tool',
      toolCallId: `c${i}`,
      content,
    }));
    const ui = toUiMessages(THREAD, rows({ id: 'a1', role: 'assistant', toolCalls: calls }, ...tools));
    const invocations = partsOf(ui, 'a1')
      .filter((p) => p.type === 'tool-invocation')
      .map((p) => p.toolInvocation);
    expect(invocations.map((i) => i.state)).toEqual(results.map(() => 'result'));
    expect(invocations.map((i) => i.result)).toEqual(results.map(([, expected]) => expected));
  });

  it('tool result content given as text parts is read as its text', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{}')] },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: [{ type: 'text', text: '{"ok":true}' }] },
      ),
    );
    expect(partsOf(ui, 'a1')[1]).toMatchObject({ toolInvocation: { state: 'result', result: { ok: true } } });
  });

  it('a tool message with error becomes the result {error}, whatever its content', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{}')] },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"partial":1}', error: 'City not found' },
      ),
    );
    expect(partsOf(ui, 'a1')[1]).toEqual({
      type: 'tool-invocation',
      toolInvocation: {
        state: 'result',
        toolCallId: 'c1',
        toolName: 'x',
        args: {},
        result: { error: 'City not found' },
      },
    });
  });

  it('a result in the rows wins over one for the same call in laterResults', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 'a1', role: 'assistant', toolCalls: [call('c1', 'x', '{}')] },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '"from rows"' },
      ),
      [{ body: { id: 't0', role: 'tool', toolCallId: 'c1', content: '"from later"' } }],
    );
    expect(partsOf(ui, 'a1')[1]).toMatchObject({ toolInvocation: { result: 'from rows' } });
  });

  it('several calls keep their order and each gets its own result', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        {
          id: 'a1',
          role: 'assistant',
          toolCalls: [
            call('c1', 'add', '{"a":1}'),
            call('c2', 'mul', '{"a":2}'),
            call('c3', 'sub', '{"a":3}'),
          ],
        },
        { id: 't2', role: 'tool', toolCallId: 'c2', content: '4' },
        { id: 't1', role: 'tool', toolCallId: 'c1', content: '2' },
      ),
    );
    expect(
      partsOf(ui, 'a1')
        .filter((p) => p.type === 'tool-invocation')
        .map((p) => [
          p.toolInvocation.toolCallId,
          p.toolInvocation.toolName,
          p.toolInvocation.state,
          p.toolInvocation.result,
        ]),
    ).toEqual([
      ['c1', 'add', 'result', 2],
      ['c2', 'mul', 'result', 4],
      ['c3', 'sub', 'call', undefined],
    ]);
  });

  it('an activity message shows its content as JSON text', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 'x1', role: 'activity', activityType: 'PLAN', content: { steps: ['a', 'b'], done: false } },
        { id: 'x2', role: 'activity', activityType: 'EMPTY' },
      ),
    );
    expect(ui.map((m) => [m.id, m.role, m.content.parts])).toEqual([
      ['x1', 'activity', [{ type: 'text', text: '{"steps":["a","b"],"done":false}' }]],
      ['x2', 'activity', [{ type: 'text', text: '{}' }]],
    ]);
  });

  it('system and developer messages are listed with their text', () => {
    const ui = toUiMessages(
      THREAD,
      rows(
        { id: 's1', role: 'system', content: 'Be nice' },
        { id: 'd1', role: 'developer', content: 'Dev note' },
      ),
    );
    expect(ui.map((m) => [m.id, m.role, m.content.parts])).toEqual([
      ['s1', 'system', [{ type: 'text', text: 'Be nice' }]],
      ['d1', 'developer', [{ type: 'text', text: 'Dev note' }]],
    ]);
  });

  it('keeps row order, and every message carries the thread id and its own createdAt', () => {
    const input = rows(user('u1', 'a'), { id: 'a1', role: 'assistant', content: 'b' }, user('u2', 'c'), {
      id: 'a2',
      role: 'assistant',
      content: 'd',
    });
    const ui = toUiMessages('other-thread', input);
    expect(ui.map((m) => m.id)).toEqual(['u1', 'a1', 'u2', 'a2']);
    expect(ui.every((m) => m.threadId === 'other-thread')).toBe(true);
    expect(ui.map((m) => m.createdAt)).toEqual([
      '2025-01-02T03:04:05.006Z',
      '2025-01-02T03:04:06.006Z',
      '2025-01-02T03:04:07.006Z',
      '2025-01-02T03:04:08.006Z',
    ]);
  });

  it('does not change the rows it is given', () => {
    const input = rows(
      { id: 'a1', role: 'assistant', content: 'x', toolCalls: [call('c1', 'x', '{"a":1}')] },
      { id: 't1', role: 'tool', toolCallId: 'c1', content: '{"r":1}' },
    );
    const before = structuredClone(input);
    toUiMessages(THREAD, input);
    expect(input).toEqual(before);
  });
});
