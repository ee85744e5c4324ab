import { randomUUID } from 'node:crypto';
import {
  ASSISTANT_MESSAGE,
  INTERRUPT,
  OWNER,
  RUN,
  THREAD,
  TOOL_CALL,
  TOOL_MESSAGE,
} from './example-resources';

// The examples of POST /run: the bodies a reader sends as they are, and the stream one of them gives.

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
export function runExamples(): Record<string, { summary: string; value: unknown }> {
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
export const STREAM = [
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
export const sse = (events: object[]) =>
  events
    .map(
      (event, i) =>
        `id: ${i + 1}\ndata: ${JSON.stringify({ ...event, timestamp: 1796029502481 + i * 40 })}\n\n`,
    )
    .join('');

/** A run's frames as a thread's stream numbers them: `id: <run>:<seq>`. */
export const threadStream = (frames: string, run: number) => frames.replace(/^id: /gm, `id: ${run}:`);
