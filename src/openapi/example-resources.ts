import { randomUUID } from 'node:crypto';

// What the examples of the OpenAPI document show: the same agent, thread, messages and run
// throughout, so a reader follows one conversation from route to route.

// Fixed ids for what a response shows; requests a reader sends as they are get fresh ones
// (runExamples, run-examples.ts).
export const THREAD = '5b7e2f0c-8d4a-4c1e-9f3b-2a6d8c0e4f71';
export const RUN = 'c3f1a9d2-6e4b-4a7c-8b5d-0f2e9a1c7b36';
const USER_MESSAGE = '0d9c4b2e-7a1f-4e63-b8d5-3c6f2a9e1b04';
export const ASSISTANT_MESSAGE = 'e8a2f6c1-4b9d-4f07-a3e5-7d1c0b6f2a98';
export const TOOL_MESSAGE = '91f4d7b3-2c8e-4a5f-b6d0-8e3a1c9f7b25';
export const TOOL_CALL = 'call_7f3a9c2e1b';
export const INTERRUPT = 'a4e7c1f9-3b2d-4e8a-9c6f-1d5b0e7a2c83';
export const OWNER = 'jane.doe@example.com';
export const CREATED = '2026-11-30T09:15:02.481Z';
const UPDATED = '2026-11-30T09:16:40.117Z';

export const calculate = {
  name: 'calculate',
  description:
    'Evaluates an arithmetic expression: + - * / % ^, parentheses, sqrt, abs, round, floor, ceil, min, max, pi, e.',
};
export const assistant = {
  id: 'assistant',
  name: 'Assistant',
  description:
    'A general assistant with a clock, a calculator and notes to publish (each approved by a person first).',
  modelId: 'openai/gpt-4o-mini',
  tools: [
    {
      name: 'current_time',
      description: 'The current date and time in an IANA time zone such as Europe/Paris or UTC.',
    },
    calculate,
    {
      name: 'publish_note',
      description: 'Publishes a short note for everyone to read. A person must approve each note first.',
      requiresApproval: true,
    },
  ],
  capabilities: { frontendTools: true, structuredOutput: true, memory: true },
};
export const thread = {
  id: THREAD,
  resourceId: OWNER,
  agentId: 'assistant',
  title: 'Trip to Lisbon',
  metadata: { project: 'travel' },
  createdAt: CREATED,
  updatedAt: UPDATED,
};

/** A thread's messages, as `format=ui` (the default) and `format=agui` return them. */
export const uiMessages = {
  messages: [
    {
      id: USER_MESSAGE,
      threadId: THREAD,
      role: 'user',
      createdAt: CREATED,
      content: { format: 2, parts: [{ type: 'text', text: 'What is (12.5 * 4) + 7?' }] },
    },
    {
      id: ASSISTANT_MESSAGE,
      threadId: THREAD,
      role: 'assistant',
      createdAt: UPDATED,
      content: {
        format: 2,
        parts: [
          { type: 'step-start' },
          {
            type: 'tool-invocation',
            toolInvocation: {
              state: 'result',
              toolCallId: TOOL_CALL,
              toolName: 'calculate',
              args: { expression: '(12.5 * 4) + 7' },
              result: { expression: '(12.5 * 4) + 7', result: 57 },
            },
          },
          { type: 'step-start' },
          { type: 'text', text: 'That makes 57.' },
        ],
      },
    },
  ],
  nextCursor: null,
};
export const aguiMessages = {
  messages: [
    { id: USER_MESSAGE, role: 'user', content: 'What is (12.5 * 4) + 7?' },
    {
      id: ASSISTANT_MESSAGE,
      role: 'assistant',
      toolCalls: [
        {
          id: TOOL_CALL,
          type: 'function',
          function: { name: 'calculate', arguments: '{"expression":"(12.5 * 4) + 7"}' },
        },
      ],
    },
    {
      id: TOOL_MESSAGE,
      role: 'tool',
      toolCallId: TOOL_CALL,
      content: '{"expression":"(12.5 * 4) + 7","result":57}',
    },
    { id: randomUUID(), role: 'assistant', content: 'That makes 57.' },
  ],
  nextCursor: null,
};

export const run = {
  id: RUN,
  threadId: THREAD,
  agentId: 'assistant',
  status: 'finished',
  startedAt: CREATED,
  finishedAt: '2026-11-30T09:15:04.902Z',
  pendingToolCalls: [],
  usage: [
    {
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 1843,
      outputTokens: 212,
      totalTokens: 2055,
      cachedInputTokens: 1024,
    },
  ],
};
export const budget = {
  tokens: 2_000_000,
  window: '1d',
  spent: 15_320,
  remaining: 1_984_680,
  source: 'configuration',
};
export const activeRun = {
  id: RUN,
  threadId: THREAD,
  agentId: 'assistant',
  status: 'running',
  startedAt: CREATED,
  pendingToolCalls: [{ toolCallId: TOOL_CALL, toolName: 'pick_date' }],
};
export const health = (status: 'up' | 'down') => ({
  status: status === 'up' ? 'ok' : 'error',
  info: status === 'up' ? { shutdown: { status }, database: { status }, migrations: { status } } : {},
  error: status === 'up' ? {} : { database: { status, message: 'timeout' } },
  details: { shutdown: { status: 'up' }, database: { status }, migrations: { status: 'up' } },
});
