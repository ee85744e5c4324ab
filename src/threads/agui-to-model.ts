import { StoredMessage, textOf } from './message-format';

/** AI SDK model messages, as Mastra's `agent.stream()` takes them. */
type TextPart = { type: 'text'; text: string };
type FilePart = { type: 'file'; data: string | URL; mediaType: string; filename?: string };
type ImagePart = { type: 'image'; image: string | URL; mediaType?: string };
type ToolCallPart = { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown };
type ToolResultOutput =
  { type: 'json'; value: any } | { type: 'text'; value: string } | { type: 'error-text'; value: string };
type ToolResultPart = { type: 'tool-result'; toolCallId: string; toolName: string; output: ToolResultOutput };

export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | Array<TextPart | ImagePart | FilePart> }
  | { role: 'assistant'; content: Array<TextPart | ToolCallPart> }
  | { role: 'tool'; content: ToolResultPart[] };

/** AG-UI content part (1.0): text, or media with a data, url or provider-file source. */
type ContentPart =
  | { type: 'text'; text: string }
  | {
      type: 'image' | 'audio' | 'video' | 'document';
      source: { type: 'data' | 'url' | 'file'; value: string; mimeType?: string };
    };

const DEFAULT_MEDIA_TYPE = {
  image: 'image/*',
  audio: 'audio/*',
  video: 'video/*',
  document: 'application/octet-stream',
};

function toUserPart(part: ContentPart): TextPart | ImagePart | FilePart | undefined {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const { source } = part;
  // A provider-issued file handle cannot be resolved by a generic model call.
  if (source.type === 'file') return undefined;
  if (source.type === 'url' && !URL.canParse(source.value)) return undefined;
  const data = source.type === 'url' ? new URL(source.value) : source.value;
  const mediaType = source.mimeType ?? DEFAULT_MEDIA_TYPE[part.type];
  if (part.type === 'image') return { type: 'image', image: data, mediaType };
  return { type: 'file', data, mediaType };
}

function parseArgs(text: string): unknown {
  try {
    const value = JSON.parse(text);
    return value !== null && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

function toolOutput(m: StoredMessage): ToolResultOutput {
  if (m.error) return { type: 'error-text', value: m.error };
  const text = textOf(m.content);
  try {
    return { type: 'json', value: JSON.parse(text) };
  } catch {
    return { type: 'text', value: text };
  }
}

/**
 * AG-UI messages → model messages. `activity` and `reasoning` never reach the model; `developer`
 * becomes `system`; tool results carry the name of the call they answer, and a result without its
 * call is left out. `toolName` gives a tool's name as the model knows it (an alias for a name a
 * provider cannot take).
 */
export function aguiToModelMessages(
  messages: StoredMessage[],
  toolName: (name: string) => string = (name) => name,
): ModelMessage[] {
  const toolNames = new Map<string, string>();
  const out: ModelMessage[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'developer':
        out.push({ role: 'system', content: textOf(m.content) });
        break;
      case 'user':
        if (typeof m.content === 'string') out.push({ role: 'user', content: m.content });
        else {
          const parts = (m.content as ContentPart[]).map(toUserPart).filter((p) => p !== undefined);
          out.push({ role: 'user', content: parts });
        }
        break;
      case 'assistant': {
        const parts: Array<TextPart | ToolCallPart> = [];
        if (typeof m.content === 'string' && m.content) parts.push({ type: 'text', text: m.content });
        for (const call of m.toolCalls ?? []) {
          const name = toolName(call.function.name);
          toolNames.set(call.id, name);
          parts.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: name,
            input: parseArgs(call.function.arguments),
          });
        }
        if (parts.length) out.push({ role: 'assistant', content: parts });
        break;
      }
      case 'tool': {
        const toolCallId = m.toolCallId!;
        const toolName = toolNames.get(toolCallId);
        // A result whose call is not in view (history cut at lastMessages) would be refused by providers.
        if (toolName === undefined) break;
        const part: ToolResultPart = { type: 'tool-result', toolCallId, toolName, output: toolOutput(m) };
        const previous = out[out.length - 1];
        if (previous?.role === 'tool') previous.content.push(part);
        else out.push({ role: 'tool', content: [part] });
        break;
      }
      default:
        break;
    }
  }
  return out;
}

/** Run-input context entries as one system message the model reads before the conversation. */
export function contextToModelMessages(
  context: Array<{ description: string; value: string }>,
): ModelMessage[] {
  if (!context.length) return [];
  const lines = context.map((c) => `- ${c.description}: ${c.value}`);
  return [{ role: 'system', content: `Context provided by the application:\n${lines.join('\n')}` }];
}
