import type { ChatRequest, Reply } from './openai-server';

/** The text of a chat message's content: a string, or its text parts. */
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('')
      : '';

/**
 * A provider double's answer as the scripted model would give it, for agents of a team's own Mastra
 * project whose model is the OpenAI-compatible test server: a user message of `/tool <name> <json>`
 * lines is answered with those tool calls (the conformance kit's prompts), anything else, and every
 * request after a tool's result, with a short text.
 */
export function answerAsScripted(request: ChatRequest): Reply {
  const last = request.messages.at(-1);
  if (last?.role === 'user') {
    const calls = [...textOf(last.content).matchAll(/^\/tool (\S+) (.*)$/gm)].map((m, i) => ({
      id: `call_${Date.now().toString(36)}_${i}`,
      name: m[1],
      arguments: m[2],
    }));
    if (calls.length) return { toolCalls: calls };
  }
  return { text: ['Done', ' as asked.'] };
}
