import { AguiToolCall, StoredMessage, UiMessage, UiPart } from './message-format';

/**
 * A message as Mastra's memory stores it (`mastra_messages`): its content is Mastra's format 2, a
 * list of parts as JSON text (docs/protocol.md#where-threads-live). This module reads it as the
 * two formats of `GET /threads/{id}/messages`.
 */
export type MastraRow = { id: string; role: string; content: string; createdAt: Date };

type MastraPart = {
  type: string;
  text?: string;
  toolInvocation?: {
    state?: string;
    toolCallId?: string;
    toolName?: string;
    args?: unknown;
    result?: unknown;
    errorText?: string;
  };
};

/** A row's parts: format 2 as stored, or the bare text of an older row. */
function partsOf(row: MastraRow): MastraPart[] {
  let content: unknown;
  try {
    content = JSON.parse(row.content);
  } catch {
    return [{ type: 'text', text: row.content }];
  }
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  const parts = (content as { parts?: unknown })?.parts;
  if (Array.isArray(parts)) return parts.filter((p): p is MastraPart => typeof p?.type === 'string');
  const text = (content as { content?: unknown })?.content;
  return typeof text === 'string' ? [{ type: 'text', text }] : [];
}

const ROLES = new Set(['user', 'assistant', 'system']);
/** A role AG-UI knows, from Mastra's (`signal` and anything newer read as `user`, what the model saw them as). */
const roleOf = (role: string) => (ROLES.has(role) ? role : 'user') as 'user' | 'assistant' | 'system';

const textOf = (parts: MastraPart[]) =>
  parts
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('');

/** A tool call's or result's JSON as AG-UI carries it: text as it is, anything else as JSON. */
const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

/** The invocation has its result (or failed: its error is the result the model saw). */
const answered = (state: string | undefined) => state === 'result' || state === 'output-error';

/**
 * A stored Mastra message as AG-UI messages: a user or system message as one; an assistant message
 * as one per step (its text and the tool calls it made, then a tool message for each answered call;
 * a step's text after a tool's result starts the next). The ids are the row's, the later steps'
 * `<id>:<n>`, a tool message's `<id>:<toolCallId>`, so each reads back the same.
 */
export function aguiOf(row: MastraRow): StoredMessage[] {
  const parts = partsOf(row);
  const role = roleOf(row.role);
  if (role !== 'assistant') return [{ id: row.id, role, content: textOf(parts) }];
  const messages: StoredMessage[] = [];
  let text = '';
  let calls: AguiToolCall[] = [];
  let results: StoredMessage[] = [];
  const flush = () => {
    if (!text && !calls.length) return;
    const id = messages.length
      ? `${row.id}:${messages.filter((m) => m.role === 'assistant').length}`
      : row.id;
    messages.push({
      id,
      role: 'assistant',
      ...(text ? { content: text } : {}),
      ...(calls.length ? { toolCalls: calls } : {}),
    });
    messages.push(...results);
    text = '';
    calls = [];
    results = [];
  };
  for (const part of parts) {
    if (part.type === 'text' && typeof part.text === 'string') {
      if (results.length) flush();
      text += part.text;
    } else if (part.type === 'tool-invocation' && part.toolInvocation?.toolCallId) {
      const call = part.toolInvocation;
      const toolCallId = String(call.toolCallId);
      calls.push({
        id: toolCallId,
        type: 'function',
        function: { name: String(call.toolName ?? ''), arguments: asText(call.args ?? {}) },
      });
      if (answered(call.state)) {
        results.push({
          id: `${row.id}:${toolCallId}`,
          role: 'tool',
          toolCallId,
          content: asText(call.state === 'output-error' ? (call.errorText ?? call.result) : call.result),
          ...(call.state === 'output-error' ? { error: String(call.errorText ?? 'failed') } : {}),
        });
      }
    }
  }
  flush();
  return messages.length ? messages : [{ id: row.id, role: 'assistant', content: '' }];
}

/**
 * A stored Mastra message in the `ui` format io.Assist reads: its parts as they are (text, step
 * starts, tool invocations: `result` once answered), less those the format has no place for.
 */
export function uiOf(threadId: string, row: MastraRow): UiMessage {
  const parts: UiPart[] = [];
  for (const part of partsOf(row)) {
    if (part.type === 'text' && typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.type === 'step-start') parts.push({ type: 'step-start' });
    else if (part.type === 'tool-invocation' && part.toolInvocation?.toolCallId) {
      const call = part.toolInvocation;
      const done = answered(call.state);
      parts.push({
        type: 'tool-invocation',
        toolInvocation: {
          state: done ? 'result' : 'call',
          toolCallId: String(call.toolCallId),
          toolName: String(call.toolName ?? ''),
          args: call.args ?? {},
          ...(done
            ? { result: call.state === 'output-error' ? { error: call.errorText ?? 'failed' } : call.result }
            : {}),
        },
      });
    }
  }
  return {
    id: row.id,
    threadId,
    role: roleOf(row.role),
    createdAt: row.createdAt.toISOString(),
    content: { format: 2, parts },
  };
}
