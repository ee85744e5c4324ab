import { runAgentInputProblems } from '../protocol/run-agent-input.schema';
import { aguiToModelMessages, contextToModelMessages } from './agui-to-model';
import { StoredMessage } from './message-format';

let seq = 0;
const msg = (m: Partial<StoredMessage> & Pick<StoredMessage, 'role'>): StoredMessage => ({
  id: `m${++seq}`,
  ...m,
});
const call = (id: string, name: string, args: string) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

describe('aguiToModelMessages', () => {
  it('returns nothing for no messages', () => {
    expect(aguiToModelMessages([])).toEqual([]);
  });

  describe('user', () => {
    it('keeps string content as it is', () => {
      expect(aguiToModelMessages([msg({ role: 'user', content: 'hello' })])).toEqual([
        { role: 'user', content: 'hello' },
      ]);
    });

    it('turns content parts into model parts: text, image data, image url, document', () => {
      const [message] = aguiToModelMessages([
        msg({
          role: 'user',
          content: [
            { type: 'text', text: 'look at these' },
            { type: 'image', source: { type: 'data', value: 'iVBORw0KGgo=', mimeType: 'image/png' } },
            { type: 'image', source: { type: 'url', value: 'https://example.com/cat.jpg' } },
            { type: 'document', source: { type: 'data', value: 'JVBERi0=', mimeType: 'application/pdf' } },
            {
              type: 'document',
              source: { type: 'url', value: 'https://example.com/a.pdf', mimeType: 'application/pdf' },
            },
          ],
        }),
      ]);
      expect(message).toEqual({
        role: 'user',
        content: [
          { type: 'text', text: 'look at these' },
          { type: 'image', image: 'iVBORw0KGgo=', mediaType: 'image/png' },
          { type: 'image', image: new URL('https://example.com/cat.jpg'), mediaType: 'image/*' },
          { type: 'file', data: 'JVBERi0=', mediaType: 'application/pdf' },
          { type: 'file', data: new URL('https://example.com/a.pdf'), mediaType: 'application/pdf' },
        ],
      });
      const content = message.content as Array<{ image?: unknown; data?: unknown }>;
      expect(content[2].image).toBeInstanceOf(URL);
      expect(content[4].data).toBeInstanceOf(URL);
    });

    it.each([
      ['audio', 'audio/*'],
      ['video', 'video/*'],
      ['document', 'application/octet-stream'],
    ] as const)('a %s url without mimeType becomes a file of %s', (type, mediaType) => {
      expect(
        aguiToModelMessages([
          msg({ role: 'user', content: [{ type, source: { type: 'url', value: 'https://x.test/f' } }] }),
        ]),
      ).toEqual([
        { role: 'user', content: [{ type: 'file', data: new URL('https://x.test/f'), mediaType }] },
      ]);
    });

    it('drops a provider file handle, which a generic model call cannot resolve', () => {
      expect(
        aguiToModelMessages([
          msg({
            role: 'user',
            content: [
              { type: 'text', text: 'see file' },
              { type: 'image', source: { type: 'file', value: 'file-abc123' } },
            ],
          }),
        ]),
      ).toEqual([{ role: 'user', content: [{ type: 'text', text: 'see file' }] }]);
    });
  });

  describe('assistant', () => {
    it('keeps text as a text part', () => {
      expect(aguiToModelMessages([msg({ role: 'assistant', content: 'Hi there' })])).toEqual([
        { role: 'assistant', content: [{ type: 'text', text: 'Hi there' }] },
      ]);
    });

    it('turns toolCalls into tool-call parts with parsed arguments, after the text', () => {
      expect(
        aguiToModelMessages([
          msg({
            role: 'assistant',
            content: 'Checking.',
            toolCalls: [call('c1', 'weather', '{"city":"Paris","days":[1,2]}'), call('c2', 'time', '{}')],
          }),
        ]),
      ).toEqual([
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            {
              type: 'tool-call',
              toolCallId: 'c1',
              toolName: 'weather',
              input: { city: 'Paris', days: [1, 2] },
            },
            { type: 'tool-call', toolCallId: 'c2', toolName: 'time', input: {} },
          ],
        },
      ]);
    });

    it.each(['', 'not json', '{"a":', '"a string"', '42', 'null', 'true'])(
      'arguments %j that are not a JSON object become {}',
      (args) => {
        const [message] = aguiToModelMessages([
          msg({ role: 'assistant', toolCalls: [call('c1', 'f', args)] }),
        ]);
        expect(message).toEqual({
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'f', input: {} }],
        });
      },
    );

    it('a message with empty text and no tool calls is not forwarded', () => {
      expect(
        aguiToModelMessages([msg({ role: 'assistant', content: '' }), msg({ role: 'assistant' })]),
      ).toEqual([]);
    });

    it('tool calls without text give only tool-call parts', () => {
      expect(
        aguiToModelMessages([
          msg({ role: 'assistant', content: '', toolCalls: [call('c', 'f', '{"x":1}')] }),
        ]),
      ).toEqual([
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'f', input: { x: 1 } }],
        },
      ]);
    });
  });

  describe('tool', () => {
    const assistant = msg({
      role: 'assistant',
      toolCalls: [call('c1', 'weather', '{}'), call('c2', 'time', '{}')],
    });
    const result = (m: Partial<StoredMessage>) =>
      aguiToModelMessages([assistant, msg({ role: 'tool', ...m })])[1];

    it('JSON content becomes a json output, carrying the name of the call it answers', () => {
      expect(result({ toolCallId: 'c1', content: '{"tempC":21}' })).toEqual({
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'weather',
            output: { type: 'json', value: { tempC: 21 } },
          },
        ],
      });
    });

    it.each([
      ['42', 42],
      ['"quoted"', 'quoted'],
      ['[1,2]', [1, 2]],
      ['null', null],
    ])('content %j is JSON: %j', (content, value) => {
      expect(result({ toolCallId: 'c2', content }).content).toEqual([
        { type: 'tool-result', toolCallId: 'c2', toolName: 'time', output: { type: 'json', value } },
      ]);
    });

    it('text content that is not JSON becomes a text output', () => {
      expect(result({ toolCallId: 'c1', content: 'sunny, 21°C' }).content).toEqual([
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'weather',
          output: { type: 'text', value: 'sunny, 21°C' },
        },
      ]);
    });

    it('content parts are read as their text, joined by newlines', () => {
      const content = [
        { type: 'text', text: 'line one' },
        { type: 'image', source: { type: 'url', value: 'https://x.test/i.png' } },
        { type: 'text', text: 'line two' },
      ];
      expect(result({ toolCallId: 'c1', content }).content).toEqual([
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'weather',
          output: { type: 'text', value: 'line one\nline two' },
        },
      ]);
    });

    it('an error becomes an error-text output, whatever the content', () => {
      expect(
        result({ toolCallId: 'c1', content: '{"ignored":true}', error: 'City not found' }).content,
      ).toEqual([
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'weather',
          output: { type: 'error-text', value: 'City not found' },
        },
      ]);
    });

    it('a result whose call is not in the history is left out (providers refuse it)', () => {
      expect(aguiToModelMessages([msg({ role: 'tool', toolCallId: 'nope', content: '1' })])).toEqual([]);
      const out = aguiToModelMessages([
        msg({ role: 'user', content: 'q' }),
        assistant,
        msg({ role: 'tool', toolCallId: 'c1', content: '1' }),
        msg({ role: 'tool', toolCallId: 'orphan', content: '2' }),
        msg({ role: 'tool', toolCallId: 'c2', content: '3' }),
      ]);
      expect(out.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect((out[2].content as Array<{ toolCallId: string }>).map((p) => p.toolCallId)).toEqual([
        'c1',
        'c2',
      ]);
    });

    it('consecutive tool messages are grouped into one tool message, in order', () => {
      const out = aguiToModelMessages([
        assistant,
        msg({ role: 'tool', toolCallId: 'c2', content: '"12:00"' }),
        msg({ role: 'tool', toolCallId: 'c1', content: '{"tempC":21}' }),
        msg({ role: 'assistant', content: 'Done.' }),
        msg({ role: 'tool', toolCallId: 'c1', content: 'again' }),
      ]);
      expect(out.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool']);
      expect(out[1].content).toEqual([
        { type: 'tool-result', toolCallId: 'c2', toolName: 'time', output: { type: 'json', value: '12:00' } },
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'weather',
          output: { type: 'json', value: { tempC: 21 } },
        },
      ]);
      expect(out[3].content).toHaveLength(1);
    });

    it('a tool message after a reasoning or activity message still joins the previous tool message', () => {
      const out = aguiToModelMessages([
        assistant,
        msg({ role: 'tool', toolCallId: 'c1', content: '1' }),
        msg({ role: 'reasoning', content: 'hmm' }),
        msg({ role: 'tool', toolCallId: 'c2', content: '2' }),
      ]);
      expect(out).toHaveLength(2);
      expect(out[1].content).toHaveLength(2);
    });
  });

  describe('system, developer, activity, reasoning', () => {
    it('system stays system and developer becomes system', () => {
      expect(
        aguiToModelMessages([
          msg({ role: 'system', content: 'Be brief.' }),
          msg({ role: 'developer', content: 'Use metric units.' }),
        ]),
      ).toEqual([
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Use metric units.' },
      ]);
    });

    it('activity and reasoning messages are never forwarded', () => {
      expect(
        aguiToModelMessages([
          msg({ role: 'user', content: 'q' }),
          msg({ role: 'activity', activityType: 'search', content: { status: 'running' } }),
          msg({ role: 'reasoning', content: 'secret chain of thought' }),
          msg({ role: 'assistant', content: 'a' }),
        ]),
      ).toEqual([
        { role: 'user', content: 'q' },
        { role: 'assistant', content: [{ type: 'text', text: 'a' }] },
      ]);
    });
  });

  it('a conversation keeps its order across roles', () => {
    const out = aguiToModelMessages([
      msg({ role: 'system', content: 's' }),
      msg({ role: 'user', content: 'u1' }),
      msg({ role: 'assistant', toolCalls: [call('c', 'f', '{}')] }),
      msg({ role: 'tool', toolCallId: 'c', content: 'r' }),
      msg({ role: 'assistant', content: 'a' }),
      msg({ role: 'user', content: 'u2' }),
    ]);
    expect(out.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
  });

  describe('a url source that is not a URL', () => {
    const badUrl = {
      id: 'm1',
      role: 'user',
      content: [{ type: 'image', source: { type: 'url', value: 'not a url' } }],
    };

    it('is left out by the converter rather than failing the run', () => {
      expect(aguiToModelMessages([badUrl as StoredMessage])).toEqual([{ role: 'user', content: [] }]);
    });

    it('is refused by the message validation (400 before anything streams)', () => {
      const problems = runAgentInputProblems({ threadId: 't', runId: 'r', messages: [badUrl] });
      expect(problems?.map((p) => p.path)).toContain('messages.0.content');
    });
  });
});

describe('contextToModelMessages', () => {
  it('no context gives no message', () => {
    expect(contextToModelMessages([])).toEqual([]);
  });

  it('context entries become one system message, one line each', () => {
    expect(
      contextToModelMessages([
        { description: 'User name', value: 'Ada' },
        { description: 'Page', value: '/settings' },
      ]),
    ).toEqual([
      {
        role: 'system',
        content: 'Context provided by the application:\n- User name: Ada\n- Page: /settings',
      },
    ]);
  });
});
