import type { ChatRequest, OpenAiServerOptions, Reply } from './openai-server';

/** The text of a chat message's content: a string, or its text parts. */
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('')
      : '';

let calls = 0;

/**
 * A provider double's answer as the scripted model (`MODEL=scripted`) gives it, for agents of a team's
 * own Mastra project whose model is the OpenAI-compatible test server:
 * - a user message of `/tool <name> <json>` lines: those tool calls (the conformance kit's prompts);
 * - `/history`: the conversation the request holds, a `role: text` line each, system messages left out;
 * - `/json <text>`: the text;
 * - tool results at the end of the prompt: `Tool <name> returned <result>`, a line each;
 * - anything else: `You said: <text>`.
 */
export function answerAsScripted(request: ChatRequest): Reply {
  const messages = request.messages;
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const results: string[] = [];
    for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) {
      const call = messages
        .flatMap((m) => (m.tool_calls ?? []) as Array<{ id: string; function: { name: string } }>)
        .find((c) => c.id === messages[i].tool_call_id);
      results.unshift(`Tool ${call?.function.name ?? '?'} returned ${textOf(messages[i].content)}`);
    }
    return { text: [results.join('\n')] };
  }
  const text = last?.role === 'user' ? textOf(last.content) : '';
  const toolCalls = [...text.matchAll(/^\/tool (\S+) (.*)$/gm)].map((m) => ({
    id: `call_${(++calls).toString(36)}_${Date.now().toString(36)}`,
    name: m[1],
    arguments: m[2],
  }));
  if (toolCalls.length) return { toolCalls };
  if (text.trim() === '/history') {
    const lines = messages
      .filter((m) => m.role === 'user' || (m.role === 'assistant' && textOf(m.content)))
      .map((m) => `${m.role}: ${textOf(m.content)}`);
    return { text: [lines.join('\n')] };
  }
  if (text.startsWith('/json ')) return { text: [text.slice('/json '.length)] };
  return { text: ['You said: ', text] };
}

/**
 * The provider double's options for an agent whose Memory generates titles (`generateTitle`): its
 * title request, made in the background after a run, is answered `title` apart from the script.
 */
export const titlesAnswered = (title: string): OpenAiServerOptions => ({
  aside: (request) =>
    request.messages.some((m) => m.role === 'system' && String(m.content).includes('generate a short title'))
      ? { text: [title] }
      : undefined,
});
