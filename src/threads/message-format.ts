/**
 * The stored shape of a message is the AG-UI 1.0 message itself (what `format=agui` returns and a
 * later `RunAgentInput.messages` replays). This module converts between it and the run input and the
 * `ui` format io.Assist reads (`content.parts`).
 */
export type AguiToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

export type StoredMessage = {
  id: string;
  role: 'user' | 'assistant' | 'system' | 'developer' | 'tool' | 'activity' | 'reasoning';
  content?: unknown;
  name?: string;
  toolCalls?: AguiToolCall[];
  toolCallId?: string;
  error?: string;
  activityType?: string;
  encryptedValue?: string;
  metadata?: Record<string, unknown>;
};

const STORED_KEYS = [
  'id',
  'role',
  'content',
  'name',
  'toolCalls',
  'toolCallId',
  'error',
  'activityType',
  'encryptedValue',
  'metadata',
] as const;

/** A validated input message as stored: known fields only, no undefined or null values. */
export function toStored(message: Record<string, unknown>): StoredMessage {
  const out: Record<string, unknown> = {};
  for (const key of STORED_KEYS) {
    const value = message[key];
    if (value === undefined || value === null) continue;
    out[key] = key === 'toolCalls' ? (value as AguiToolCall[]).map(plainToolCall) : value;
  }
  return out as StoredMessage;
}

function plainToolCall(call: AguiToolCall): AguiToolCall {
  return {
    id: call.id,
    type: 'function',
    function: { name: call.function.name, arguments: call.function.arguments },
  };
}

/** Plain text of a message's content (strings as they are, the text parts of a part list). */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((p: { type?: string }) => p?.type === 'text')
      .map((p: { text: string }) => p.text)
      .join('\n');
  }
  return '';
}

/** A thread title from its first user message: its first line, at most 80 characters. */
export function titleFrom(messages: StoredMessage[]): string | undefined {
  const first = messages.find((m) => m.role === 'user');
  const line = first ? textOf(first.content).trim().split('\n')[0].trim() : '';
  if (!line) return undefined;
  const chars = Array.from(line); // by code point, so an emoji is never cut in half
  return chars.length > 80 ? `${chars.slice(0, 79).join('')}…` : line;
}

export type UiPart =
  | { type: 'text'; text: string }
  | { type: 'step-start' }
  | {
      type: 'tool-invocation';
      toolInvocation: {
        state: 'call' | 'result';
        toolCallId: string;
        toolName: string;
        args: unknown;
        result?: unknown;
      };
    };

export type UiMessage = {
  id: string;
  threadId: string;
  role: StoredMessage['role'];
  createdAt: string;
  content: { format: 2; parts: UiPart[] };
};

function parseJson(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}

/**
 * The `ui` format: a tool call and its result are one `tool-invocation` part on the assistant message
 * (state `result` once the result exists), so tool messages themselves are not listed.
 */
export function toUiMessages(
  threadId: string,
  rows: Array<{ body: StoredMessage; createdAt: Date }>,
  laterResults: Array<{ body: StoredMessage }> = [],
): UiMessage[] {
  const results = new Map<string, unknown>();
  for (const { body } of [...laterResults, ...rows]) {
    if (body.role === 'tool' && body.toolCallId) {
      const text = textOf(body.content);
      results.set(body.toolCallId, body.error !== undefined ? { error: body.error } : parseJson(text, text));
    }
  }
  return rows
    .filter(({ body }) => body.role !== 'tool')
    .map(({ body, createdAt }) => {
      const parts: UiPart[] = [];
      if (body.role === 'assistant') parts.push({ type: 'step-start' });
      const text = body.role === 'activity' ? JSON.stringify(body.content ?? {}) : textOf(body.content);
      if (text) parts.push({ type: 'text', text });
      for (const call of body.toolCalls ?? []) {
        const args = parseJson(call.function.arguments, {});
        const done = results.has(call.id);
        parts.push({
          type: 'tool-invocation',
          toolInvocation: {
            state: done ? 'result' : 'call',
            toolCallId: call.id,
            toolName: call.function.name,
            args,
            ...(done ? { result: results.get(call.id) } : {}),
          },
        });
      }
      return {
        id: body.id,
        threadId,
        role: body.role,
        createdAt: createdAt.toISOString(),
        content: { format: 2, parts },
      };
    });
}
