import { randomUUID } from 'node:crypto';
import {
  activeRun,
  aguiMessages,
  assistant,
  budget,
  calculate,
  CREATED,
  health,
  INTERRUPT,
  OWNER,
  run,
  RUN,
  thread,
  THREAD,
  TOOL_CALL,
  uiMessages,
} from './example-resources';
import { runExamples, sse, STREAM, threadStream } from './run-examples';

/** An OpenAPI named example. */
export type Example = { summary: string; value: unknown };

/** What one operation shows: request body examples, response examples by status, parameter examples. */
export type OperationExamples = {
  body?: Record<string, Example>;
  responses?: Record<string, Record<string, Example>>;
  params?: Record<string, unknown>;
};

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
