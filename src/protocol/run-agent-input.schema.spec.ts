import { runAgentInputProblems } from './run-agent-input.schema';

const valid = () => ({ threadId: 't', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'hi' }] });
const problems = (extra: Record<string, unknown>) => runAgentInputProblems({ ...valid(), ...extra });

describe('RunAgentInput schema', () => {
  it('passes a valid body, with tools and context [] when absent', () => {
    const body = valid();
    expect(runAgentInputProblems(body)).toBeUndefined();
    expect(body).toEqual({ ...valid(), tools: [], context: [] });
  });

  it('drops unknown fields at every level, never refuses them, and keeps free-form objects whole', () => {
    const body = {
      ...valid(),
      junk: 1,
      messages: [{ id: 'm', role: 'user', content: 'hi', extra: 2, metadata: { a: { b: 1 } } }],
      tools: [{ name: 'f', x: 1, parameters: { type: 'object', 'x-any': true } }],
      context: [{ description: 'd', value: 'v', y: 2 }],
      forwardedProps: { agentId: 'assistant', anything: { deep: [1] } },
      state: { s: [1, { t: 2 }] },
      resume: [{ interruptId: 'i', status: 'resolved', payload: { approved: true }, z: 3 }],
    };
    expect(runAgentInputProblems(body)).toBeUndefined();
    expect(body).toEqual({
      ...valid(),
      messages: [{ id: 'm', role: 'user', content: 'hi', metadata: { a: { b: 1 } } }],
      tools: [{ name: 'f', parameters: { type: 'object', 'x-any': true } }],
      context: [{ description: 'd', value: 'v' }],
      forwardedProps: { agentId: 'assistant', anything: { deep: [1] } },
      state: { s: [1, { t: 2 }] },
      resume: [{ interruptId: 'i', status: 'resolved', payload: { approved: true } }],
    });
  });

  it('takes null for an optional field, as class-validator did', () => {
    expect(
      problems({
        parentRunId: null,
        protocolVersion: null,
        forwardedProps: null,
        resume: null,
        messages: [{ id: 'm', role: 'assistant', name: null, toolCalls: null, metadata: null }],
        tools: [{ name: 'f', description: null, parameters: null }],
      }),
    ).toBeUndefined();
  });

  it('checks toolCallId and activityType on their role only', () => {
    expect(
      problems({ messages: [{ id: 'm', role: 'assistant', toolCallId: 5, activityType: 1 }] }),
    ).toBeUndefined();
    expect(problems({ messages: [{ id: 'm', role: 'tool', content: 'x' }] })).toEqual([
      { path: 'messages.0.toolCallId', message: 'toolCallId must be a string' },
    ]);
    expect(problems({ messages: [{ id: 'm', role: 'activity', content: {}, activityType: '' }] })).toEqual([
      {
        path: 'messages.0.activityType',
        message: 'activityType must be longer than or equal to 1 characters',
      },
    ]);
  });

  it.each<[string, unknown, Array<{ path?: string; message: string }>]>([
    ['an array body', [], [{ message: 'the body must be an object' }]],
    [
      'no threadId',
      { runId: 'r', messages: [] },
      [{ path: 'threadId', message: 'threadId must be a string' }],
    ],
    [
      'a runId with a line feed',
      { ...valid(), runId: 'a\nb' },
      [
        {
          path: 'runId',
          message: 'runId must be 1-200 characters without control characters, not only whitespace',
        },
      ],
    ],
    [
      'an unknown role',
      { ...valid(), messages: [{ id: 'm', role: 'wizard', content: 'x' }] },
      [
        {
          path: 'messages.0.role',
          message:
            'role must be one of the following values: user, assistant, system, developer, tool, activity, reasoning',
        },
      ],
    ],
    [
      'user content a number',
      { ...valid(), messages: [{ id: 'm', role: 'user', content: 3 }] },
      [{ path: 'messages.0.content', message: 'content must be a string or an array of content parts' }],
    ],
    [
      'messages: [[]]',
      { ...valid(), messages: [[]] },
      [{ path: 'messages.0', message: 'each value in messages must be an object' }],
    ],
    [
      'a tool call without its function',
      { ...valid(), messages: [{ id: 'm', role: 'assistant', toolCalls: [{ id: 'c', type: 'function' }] }] },
      [{ path: 'messages.0.toolCalls.0.function', message: 'function must be an object' }],
    ],
    [
      'parameters of type string',
      { ...valid(), tools: [{ name: 't', parameters: { type: 'string' } }] },
      [{ path: 'tools.0.parameters', message: 'parameters must be a JSON Schema object with type "object"' }],
    ],
    [
      'a tool name with a space',
      { ...valid(), tools: [{ name: 'a b' }] },
      [{ path: 'tools.0.name', message: 'name must be 1-128 letters, digits, _ - . : or /' }],
    ],
    [
      'duplicate tool names',
      { ...valid(), tools: [{ name: 't' }, { name: 't' }] },
      [{ path: 'tools', message: 'tool names must be unique' }],
    ],
    [
      'an interrupt answered twice',
      {
        ...valid(),
        resume: [
          { interruptId: 'i', status: 'resolved' },
          { interruptId: 'i', status: 'cancelled' },
        ],
      },
      [{ path: 'resume', message: 'each interrupt is answered once' }],
    ],
    ['tools: null', { ...valid(), tools: null }, [{ path: 'tools', message: 'tools must be an array' }]],
    [
      'forwardedProps a string',
      { ...valid(), forwardedProps: 'x' },
      [{ path: 'forwardedProps', message: 'forwardedProps must be an object' }],
    ],
  ])('refuses %s, naming the field', (_name, body, want) => {
    expect(runAgentInputProblems(body)).toEqual(want);
  });

  it('reports every problem, up to the limit', () => {
    const messages = Array.from({ length: 60 }, () => ({ id: '', role: 'user', content: 'x' }));
    expect(problems({ messages })).toHaveLength(50);
  });
});
