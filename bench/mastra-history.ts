/**
 * What Mastra's MessageList costs on the largest history a `POST /run` body may carry (issue 22): the
 * history converted to model messages (aguiToModelMessages), then added to a MessageList and turned
 * into the prompt as `agent.stream()` does. Consecutive assistant and tool messages are merged into
 * one message, and each part added re-scans the parts merged so far: a long agent loop costs O(N²).
 * Run with `npm run build:bench && node dist-bench/bench/mastra-history.js` (not part of `npm test`).
 */
import 'reflect-metadata';
import { MessageList } from '@mastra/core/agent/message-list';
import { loadConfig } from '../src/config/config';
import { aguiToModelMessages } from '../src/threads/agui-to-model';
import { StoredMessage } from '../src/threads/message-format';
import { largestBody } from './largest-body';

const RUNS = 7;

/** An agent loop: assistant with a tool call, its result, and so on, then a user message. */
function agentLoop(count: number): StoredMessage[] {
  const messages: unknown[] = [];
  for (let i = 0; messages.length < count - 2; i++) {
    messages.push({
      id: `a${i}`,
      role: 'assistant',
      content: `step ${i}`,
      toolCalls: [{ id: `c${i}`, type: 'function', function: { name: 'f', arguments: `{"i":${i}}` } }],
    });
    messages.push({ id: `t${i}`, role: 'tool', toolCallId: `c${i}`, content: `{"r":${i}}` });
  }
  messages.push({ id: 'u', role: 'user', content: 'hi' });
  return messages as StoredMessage[];
}

/** Median and max CPU milliseconds (user + system) of `work`, after two warm-up runs. */
async function cpu(work: () => Promise<unknown>): Promise<{ medianMs: number; maxMs: number }> {
  for (let i = 0; i < 2; i++) await work();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = process.cpuUsage();
    await work();
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  return { medianMs: times[RUNS >> 1], maxMs: times[RUNS - 1] };
}

async function prepare(history: StoredMessage[]): Promise<void> {
  const list = new MessageList({ threadId: 'thread', resourceId: 'resource' });
  list.add(aguiToModelMessages(history), 'input');
  await list.get.all.aiV5.llmPrompt();
}

async function main(): Promise<void> {
  const { limits } = loadConfig(process.env);
  const cases: Array<[string, StoredMessage[]]> = [
    ['largest body (attacks `body`)', (JSON.parse(largestBody()) as { messages: StoredMessage[] }).messages],
    [`agent loop of ${limits.maxMessages} messages`, agentLoop(limits.maxMessages)],
    [`agent loop of ${limits.maxMessages >> 1} messages`, agentLoop(limits.maxMessages >> 1)],
  ];
  for (const [name, history] of cases) {
    const { medianMs, maxMs } = await cpu(() => prepare(history));
    console.log(`${name}: CPU median ${medianMs.toFixed(1)} ms, max ${maxMs.toFixed(1)} ms`);
  }
}

void main();
