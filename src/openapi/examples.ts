import { randomUUID } from 'node:crypto';

/** An OpenAPI named example. */
export type Example = { summary: string; value: unknown };

/** What one operation shows: request body examples, response examples by status, parameter examples. */
export type OperationExamples = {
  body?: Record<string, Example>;
  responses?: Record<string, Record<string, Example>>;
  params?: Record<string, unknown>;
};

// Fixed ids for what a response shows; requests a reader sends as they are get fresh ones (runExamples).
const THREAD = '5b7e2f0c-8d4a-4c1e-9f3b-2a6d8c0e4f71';
const RUN = 'c3f1a9d2-6e4b-4a7c-8b5d-0f2e9a1c7b36';
const USER_MESSAGE = '0d9c4b2e-7a1f-4e63-b8d5-3c6f2a9e1b04';
const ASSISTANT_MESSAGE = 'e8a2f6c1-4b9d-4f07-a3e5-7d1c0b6f2a98';
const TOOL_MESSAGE = '91f4d7b3-2c8e-4a5f-b6d0-8e3a1c9f7b25';
const TOOL_CALL = 'call_7f3a9c2e1b';
const INTERRUPT = 'a4e7c1f9-3b2d-4e8a-9c6f-1d5b0e7a2c83';
const OWNER = 'jane.doe@example.com';
const CREATED = '2026-11-30T09:15:02.481Z';
const UPDATED = '2026-11-30T09:16:40.117Z';

const calculate = {
  name: 'calculate',
  description:
    'Evaluates an arithmetic expression: + - * / % ^, parentheses, sqrt, abs, round, floor, ceil, min, max, pi, e.',
};
const assistant = {
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
const thread = {
  id: THREAD,
  resourceId: OWNER,
  agentId: 'assistant',
  title: 'Trip to Lisbon',
  metadata: { project: 'travel' },
  createdAt: CREATED,
  updatedAt: UPDATED,
};

/** A browser tool the page runs itself: the run waits for its result (or, for a stock AG-UI client, ends at it). */
const pickDate = {
  name: 'pick_date',
  description: 'Shows a date picker in the browser and returns the date the user picked',
  parameters: {
    type: 'object',
    properties: {
      purpose: { type: 'string', description: 'What the date is for' },
      earliest: { type: 'string', format: 'date' },
    },
    required: ['purpose'],
  },
};

/** POST /run bodies that run as they are on the scripted model: fresh ids on every call. */
export function runExamples(): Record<string, Example> {
  const ids = () => ({ threadId: randomUUID(), runId: randomUUID() });
  const user = (content: string) => ({ id: randomUUID(), role: 'user', content });
  const chat = ids();
  const remembered = ids();
  return {
    chat: {
      summary: 'A chat turn, stateless (nothing stored); fresh ids on every load',
      value: { ...chat, messages: [user('Hello! What can you do?')], tools: [], context: [] },
    },
    serverTool: {
      summary:
        "A server tool: the assistant's calculator (the scripted model calls it on `/tool <name> <json>`)",
      value: {
        ...ids(),
        messages: [user('/tool calculate {"expression":"(12.5 * 4) + 7"}')],
        tools: [],
        context: [],
        forwardedProps: { agentId: 'assistant' },
      },
    },
    frontendTool: {
      summary:
        'A frontend tool: the run waits for POST /runs/{runId}/tool-calls/{toolCallId}/result, with context from the page',
      value: {
        ...ids(),
        messages: [user('/tool pick_date {"purpose":"the team offsite","earliest":"2027-01-11"}')],
        tools: [pickDate],
        context: [{ description: "The user's time zone", value: 'Europe/Lisbon' }],
        forwardedProps: { agentId: 'assistant' },
      },
    },
    memory: {
      summary:
        'With memory, as io.Assist sends it: the run is stored in the thread, the model sees its history',
      value: {
        ...remembered,
        messages: [user('Plan three days in Lisbon for a first visit.')],
        tools: [],
        context: [],
        forwardedProps: {
          agentId: 'assistant',
          memory: { thread: remembered.threadId, resource: OWNER, options: { lastMessages: 20 } },
          modelSettings: { temperature: 0.3, maxTokens: 800 },
        },
      },
    },
    queued: {
      summary:
        'A second message while the thread still answers: it waits its turn (forwardedProps.ifBusy; interrupt would cancel the answer)',
      value: {
        threadId: remembered.threadId,
        runId: randomUUID(),
        messages: [user('And a restaurant for the first evening?')],
        tools: [],
        context: [],
        forwardedProps: {
          agentId: 'assistant',
          memory: { thread: remembered.threadId, resource: OWNER },
          ifBusy: 'enqueue',
        },
      },
    },
    approval: {
      summary: "Answering an approval (an AG-UI interrupt) of an earlier run's tool call on the same thread",
      value: {
        threadId: THREAD,
        runId: randomUUID(),
        messages: [],
        tools: [],
        context: [],
        resume: [{ interruptId: INTERRUPT, status: 'resolved', payload: { approved: true } }],
        forwardedProps: { agentId: 'assistant' },
      },
    },
  };
}

/** The stream of the serverTool example, as the service sends it. */
const STREAM = [
  { type: 'RUN_STARTED', threadId: THREAD, runId: RUN },
  { type: 'STEP_STARTED', stepName: 'step-1' },
  {
    type: 'TOOL_CALL_START',
    toolCallId: TOOL_CALL,
    toolCallName: 'calculate',
    parentMessageId: ASSISTANT_MESSAGE,
  },
  { type: 'TOOL_CALL_ARGS', toolCallId: TOOL_CALL, delta: '{"expression":"(12.5 * 4) + 7"}' },
  { type: 'TOOL_CALL_END', toolCallId: TOOL_CALL },
  {
    type: 'TOOL_CALL_RESULT',
    messageId: TOOL_MESSAGE,
    toolCallId: TOOL_CALL,
    content: '{"expression":"(12.5 * 4) + 7","result":57}',
    role: 'tool',
  },
  { type: 'STEP_FINISHED', stepName: 'step-1' },
  { type: 'STEP_STARTED', stepName: 'step-2' },
  { type: 'TEXT_MESSAGE_START', messageId: ASSISTANT_MESSAGE, role: 'assistant' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: ASSISTANT_MESSAGE, delta: 'That makes ' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: ASSISTANT_MESSAGE, delta: '57.' },
  { type: 'TEXT_MESSAGE_END', messageId: ASSISTANT_MESSAGE },
  { type: 'STEP_FINISHED', stepName: 'step-2' },
  { type: 'RUN_FINISHED', threadId: THREAD, runId: RUN },
];
const sse = (events: object[]) =>
  events
    .map(
      (event, i) =>
        `id: ${i + 1}\ndata: ${JSON.stringify({ ...event, timestamp: 1796029502481 + i * 40 })}\n\n`,
    )
    .join('');

/** A run's frames as a thread's stream numbers them: `id: <run>:<seq>`. */
const threadStream = (frames: string, run: number) => frames.replace(/^id: /gm, `id: ${run}:`);

const uiMessages = {
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
const aguiMessages = {
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

const run = {
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
const budget = {
  tokens: 2_000_000,
  window: '1d',
  spent: 15_320,
  remaining: 1_984_680,
  source: 'configuration',
};
const activeRun = {
  id: RUN,
  threadId: THREAD,
  agentId: 'assistant',
  status: 'running',
  startedAt: CREATED,
  pendingToolCalls: [{ toolCallId: TOOL_CALL, toolName: 'pick_date' }],
};
const health = (status: 'up' | 'down') => ({
  status: status === 'up' ? 'ok' : 'error',
  info: status === 'up' ? { shutdown: { status }, database: { status }, migrations: { status } } : {},
  error: status === 'up' ? {} : { database: { status, message: 'timeout' } },
  details: { shutdown: { status: 'up' }, database: { status }, migrations: { status: 'up' } },
});

const one = (summary: string, value: unknown) => ({ example: { summary, value } });

/** Every operation's examples, by operationId. */
export function operationExamples(): Record<string, OperationExamples> {
  return {
    AgentsController_list: {
      responses: {
        '200': one('The registry', {
          agents: [
            assistant,
            {
              id: 'calculator',
              name: 'Calculator',
              description: 'Does arithmetic with its calculate tool, and nothing else.',
              modelId: 'openai/gpt-4o-mini',
              tools: [calculate],
              capabilities: { frontendTools: true, structuredOutput: true, memory: true },
            },
          ],
          defaultAgentId: 'assistant',
        }),
      },
    },
    AgentsController_get: {
      params: { agentId: 'assistant' },
      responses: { '200': one('An agent', assistant) },
    },
    ThreadsController_create: {
      body: {
        thread: {
          summary: 'A thread with a title, an agent and metadata (fresh id on every load)',
          value: {
            id: randomUUID(),
            title: 'Trip to Lisbon',
            agentId: 'assistant',
            metadata: { project: 'travel' },
          },
        },
        generatedId: { summary: 'No id: the service makes one', value: { title: 'Weekly report' } },
      },
      responses: {
        '201': one('Created', { ...thread, updatedAt: CREATED }),
        '200': one('The same id again by the same owner: the thread as it is', thread),
      },
    },
    ThreadsController_list: {
      params: { agentId: 'assistant' },
      responses: {
        '200': one('A page of threads, newest first', {
          threads: [
            thread,
            {
              ...thread,
              id: 'f2c8a6e4-1d3b-4f9a-8e7c-5b0d2a4f6c19',
              title: 'Quarterly numbers',
              metadata: {},
            },
          ],
          nextCursor: Buffer.from(
            JSON.stringify(['2026-11-29 17:42:10.118204+00', 'f2c8a6e4-1d3b-4f9a-8e7c-5b0d2a4f6c19']),
          ).toString('base64url'),
        }),
      },
    },
    ThreadsController_get: { params: { threadId: THREAD }, responses: { '200': one('A thread', thread) } },
    ThreadsController_update: {
      params: { threadId: THREAD },
      body: {
        rename: { summary: 'Rename', value: { title: 'Lisbon, May 2027' } },
        metadata: {
          summary: 'Replace the metadata',
          value: { metadata: { project: 'travel', pinned: true } },
        },
      },
      responses: { '200': one('The thread as it is now', { ...thread, title: 'Lisbon, May 2027' }) },
    },
    ThreadsController_delete: { params: { threadId: THREAD } },
    ThreadsController_messages: {
      params: { threadId: THREAD },
      responses: {
        '200': {
          ui: { summary: 'format=ui (default): stored messages with their parts', value: uiMessages },
          agui: { summary: 'format=agui: AG-UI messages, as a client sends them back', value: aguiMessages },
        },
      },
    },
    RunsController_run: {
      body: runExamples(),
      responses: { '200': one('A run with a server tool call, then the answer', sse(STREAM)) },
    },
    RunsController_events: {
      params: { runId: RUN, after: 5, 'Last-Event-ID': '5' },
      responses: {
        '200': one(
          'The events after id 5, then the live ones',
          sse(STREAM).split('\n\n').slice(5).join('\n\n'),
        ),
      },
    },
    ThreadEventsController_events: {
      params: { threadId: THREAD, after: '2:5', 'Last-Event-ID': '2:5' },
      responses: {
        '200': one(
          "After id 2:5: the rest of the thread's second run, then each later run as it starts",
          threadStream(sse(STREAM).split('\n\n').slice(5).join('\n\n'), 2) + threadStream(sse(STREAM), 3),
        ),
      },
    },
    RunsController_submitToolResult: {
      params: { runId: RUN, toolCallId: TOOL_CALL },
      body: {
        content: { summary: "The tool's output", value: { content: { date: '2027-01-12' } } },
        error: {
          summary: 'The tool failed: the model is told',
          value: { error: 'The user closed the date picker' },
        },
      },
      responses: { '202': one('Taken: the run goes on', { accepted: true }) },
    },
    RunsController_cancel: {
      params: { runId: RUN },
      responses: { '202': one('Cancelling: the stream ends with its cancellation', { accepted: true }) },
    },
    RunsController_getRun: {
      params: { runId: RUN },
      responses: {
        '200': {
          finished: { summary: 'A finished run', value: run },
          waiting: {
            summary: 'Waiting for a frontend tool result',
            value: activeRun,
          },
          approval: {
            summary: 'Ended at a tool call that needs approval',
            value: {
              ...run,
              interrupts: [
                {
                  id: INTERRUPT,
                  reason: 'tool_approval',
                  toolCallId: TOOL_CALL,
                  message: 'Approve the call of publish_note with {"text":"Office closed on Friday"}?',
                  expiresAt: '2026-12-01T09:15:04.902Z',
                  responseSchema: {
                    type: 'object',
                    properties: { approved: { type: 'boolean' } },
                    required: ['approved'],
                  },
                },
              ],
            },
          },
          error: {
            summary: 'Ended by a model error',
            value: {
              ...run,
              status: 'error',
              error: { code: 'MODEL_ERROR', message: 'The model provider failed' },
            },
          },
        },
      },
    },
    UsageController_mine: {
      responses: {
        '200': one("The caller's last 30 days", {
          resourceId: OWNER,
          days: 30,
          usage: [
            {
              day: '2026-11-30',
              agentId: 'assistant',
              provider: 'openai',
              model: 'gpt-4o-mini',
              runs: 14,
              inputTokens: 12_040,
              outputTokens: 3_280,
              totalTokens: 15_320,
            },
          ],
          budget,
        }),
      },
    },
    UsageController_everyone: {
      responses: {
        '200': one('The largest spenders first', {
          days: 30,
          owners: [
            {
              resourceId: OWNER,
              runs: 14,
              inputTokens: 12_040,
              outputTokens: 3_280,
              totalTokens: 15_320,
              budget,
            },
          ],
        }),
      },
    },
    UsageController_setQuota: {
      params: { resourceId: OWNER },
      body: {
        daily: { summary: 'Two million tokens a day', value: { tokens: 2_000_000, window: '1d' } },
        stop: { summary: 'No more runs for this owner', value: { tokens: 0 } },
      },
      responses: {
        '200': one('The budget as it is now', { resourceId: OWNER, tokens: 2_000_000, window: '1d' }),
      },
    },
    OpsController_live: {
      responses: { '200': one('Alive', { status: 'ok', info: {}, error: {}, details: {} }) },
    },
    OpsController_ready: {
      responses: {
        '200': one('Ready: the database answers, no migration pending, not draining', health('up')),
        '503': one('Not ready: the database does not answer', health('down')),
      },
    },
  };
}
