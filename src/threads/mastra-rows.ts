import { v5 as uuidV5 } from 'uuid';
import { aguiOf, MastraRow, uiOf } from './mastra-format';
import { StoredMessage, textOf, toUiMessages, UiMessage } from './message-format';

/**
 * A thread's messages are rows of Mastra's memory (`mastra_messages`), the one store both io-bridge
 * and Mastra read (docs/protocol.md#where-threads-live). This module places AG-UI messages into such rows and
 * reads them back. A row is Mastra's format 2 (its `parts`, what Mastra's memory recalls for the
 * model) and keeps the AG-UI messages it stands for (`metadata.agui`), so that io-bridge reads them
 * back exactly, ids and all:
 * - one row per message, except tool results: Mastra has no row for those, they are part of the
 *   assistant message that made the call (its `tool-invocation` part, state `result`);
 * - a message Mastra has no part for (reasoning, activity, a tool result whose call is nowhere)
 *   is a row of its own with no parts: the model never sees it, io-bridge lists it.
 */

/** Mastra's roles for rows: a `developer` message is a `system` one, what the model reads it as. */
export type MastraRole = 'user' | 'assistant' | 'system';

type ToolInvocation = {
  state: 'call' | 'result';
  toolCallId: string;
  toolName: string;
  args: unknown;
  result?: unknown;
};

type Part =
  | { type: 'step-start' }
  | { type: 'text'; text: string }
  | { type: 'file'; data: string; mimeType: string }
  | { type: 'tool-invocation'; toolInvocation: ToolInvocation };

/** A row's content as io-bridge writes it (Mastra stores it as JSON text). */
export type RowContent = {
  format: 2;
  parts: Part[];
  /** The text of a user or system message, where Mastra keeps it too. */
  content?: string;
  metadata: { agui: StoredMessage[]; mastra?: { responseBoundary: true } };
};

/** A row to store: its id, role and content (JSON text). */
export type PlacedRow = { id: string; role: MastraRole; content: string };

/**
 * A tool result, for the row of the call it answers: `row` when that call is in the same batch (the
 * result is in that row already, unless the row was stored before), else found in the thread by
 * `needle` (the call's id as JSON text). When the thread has no such call the result is stored as
 * `orphan`.
 */
export type ToolAnswer = {
  toolCallId: string;
  needle: string;
  row: string | null;
  /** The result as Mastra's `tool-invocation` holds it. */
  result: unknown;
  message: StoredMessage;
  orphan?: PlacedRow;
};

/**
 * Messages placed into rows. `slots`: how many rows the batch may add to its thread at most (its rows
 * and its orphans), which each get a moment of their own in the thread's order.
 */
export type Placed = { rows: PlacedRow[]; answers: ToolAnswer[]; slots: number };

/** The namespace of the ids of io-bridge's rows (a UUID of its own). */
const ROW_IDS = 'b1a4f6a2-5d0e-4c3f-9a57-2f3c8e6d9b10';

/**
 * The id of the row that stores message `messageId` of thread `threadId`. Mastra's row ids are keys
 * across all threads (it moves a row to the thread that names it last), and clients pick message ids
 * (the same ones in many threads): so the id is a name-based UUID of both (ids hold no control
 * characters, so the newline between them is unambiguous).
 */
export function rowId(threadId: string, messageId: string): string {
  return uuidV5(`${threadId}\n${messageId}`, ROW_IDS);
}

/** A stored message's role as Mastra's. */
function roleOf(message: StoredMessage): MastraRole {
  if (message.role === 'user') return 'user';
  if (message.role === 'system' || message.role === 'developer') return 'system';
  return 'assistant';
}

function parseArgs(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

/** A tool message's result as Mastra keeps it: its JSON, or its text; a failure as `{ error }`. */
function resultOf(message: StoredMessage): unknown {
  if (message.error !== undefined) return { error: message.error };
  const text = textOf(message.content);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** AG-UI media parts a model can read (data or a URL) as Mastra's file parts; a provider's file handle cannot be. */
function userParts(content: unknown): Part[] {
  if (!Array.isArray(content)) return [{ type: 'text', text: textOf(content) }];
  const parts: Part[] = [];
  for (const part of content as Array<{
    type?: string;
    text?: string;
    source?: { type: string; value: string; mimeType?: string };
  }>) {
    if (part.type === 'text' && typeof part.text === 'string') parts.push({ type: 'text', text: part.text });
    else if (part.source && part.source.type !== 'file') {
      parts.push({
        type: 'file',
        data: part.source.value,
        mimeType: part.source.mimeType ?? `${part.type === 'document' ? 'application' : part.type}/*`,
      });
    }
  }
  return parts;
}

/** What Mastra's memory gives the model of a message (nothing for those the model never reads). */
function partsOf(message: StoredMessage): Part[] {
  switch (message.role) {
    case 'user':
      return userParts(message.content);
    case 'system':
    case 'developer':
      return [{ type: 'text', text: textOf(message.content) }];
    case 'assistant': {
      const text = textOf(message.content);
      const calls = message.toolCalls ?? [];
      if (!text && !calls.length) return [];
      return [
        { type: 'step-start' },
        ...(text ? [{ type: 'text' as const, text }] : []),
        ...calls.map((call): Part => ({
          type: 'tool-invocation',
          toolInvocation: {
            state: 'call',
            toolCallId: call.id,
            toolName: call.function.name,
            args: parseArgs(call.function.arguments),
          },
        })),
      ];
    }
    default:
      return [];
  }
}

type Building = { id: string; role: MastraRole; parts: Part[]; agui: StoredMessage[] };

function serialize(row: Building): PlacedRow {
  const content: RowContent = { format: 2, parts: row.parts, metadata: { agui: row.agui } };
  // Mastra's mark that ends a response: a run that goes on from this row answers in rows of its own,
  // never folded into this one (docs/protocol.md#where-threads-live).
  if (row.role === 'assistant') content.metadata.mastra = { responseBoundary: true };
  const text = row.role !== 'assistant' ? textOf(row.agui[0]?.content) : '';
  if (text) content.content = text;
  return { id: row.id, role: row.role, content: JSON.stringify(content) };
}

/**
 * Places a thread's messages, in order, into rows: each message a row, each tool result into the row
 * of the call it answers when that call is among them (see ToolAnswer for the others).
 */
export function placeMessages(threadId: string, messages: readonly StoredMessage[]): Placed {
  const rows: Building[] = [];
  const callers = new Map<string, Building>();
  const answers: ToolAnswer[] = [];
  for (const message of messages) {
    if (message.role !== 'tool') {
      const row: Building = {
        id: rowId(threadId, message.id),
        role: roleOf(message),
        parts: partsOf(message),
        agui: [message],
      };
      for (const call of message.toolCalls ?? []) callers.set(call.id, row);
      rows.push(row);
      continue;
    }
    const toolCallId = message.toolCallId ?? '';
    const caller = callers.get(toolCallId);
    const result = resultOf(message);
    if (caller) {
      for (const part of caller.parts) {
        if (part.type === 'tool-invocation' && part.toolInvocation.toolCallId === toolCallId)
          part.toolInvocation = { ...part.toolInvocation, state: 'result', result };
      }
      caller.agui.push(message);
    }
    answers.push({
      toolCallId,
      needle: JSON.stringify(toolCallId),
      row: caller?.id ?? null,
      result,
      message,
      ...(caller
        ? {}
        : {
            orphan: serialize({
              id: rowId(threadId, message.id),
              role: 'assistant',
              parts: [],
              agui: [message],
            }),
          }),
    });
  }
  const placed = rows.map(serialize);
  return { rows: placed, answers, slots: placed.length + answers.filter((a) => a.orphan).length };
}

/** A row's content, parsed (undefined when it is not JSON). */
function contentOf(row: MastraRow): Partial<RowContent> | undefined {
  try {
    const content: unknown = JSON.parse(row.content);
    return content !== null && typeof content === 'object' ? content : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The AG-UI messages a row stands for: those io-bridge placed in it, or, for a row Mastra wrote
 * (Studio, a workflow, a team's own code), what its parts say (`aguiOf`).
 */
export function messagesOf(row: MastraRow): StoredMessage[] {
  const agui = contentOf(row)?.metadata?.agui;
  return Array.isArray(agui) ? agui : aguiOf(row);
}

/** A row in the `ui` format io.Assist reads: those io-bridge placed as they were stored, the others by their parts. */
export function uiMessagesOf(threadId: string, row: MastraRow): UiMessage[] {
  const agui = contentOf(row)?.metadata?.agui;
  if (!Array.isArray(agui)) return [uiOf(threadId, row)];
  return toUiMessages(
    threadId,
    agui.map((body) => ({ body, createdAt: row.createdAt })),
  );
}

/** A placed row as Mastra's memory takes it in `agent.stream()` (a message of its own format, by id). */
export function dbMessageOf(
  row: PlacedRow,
  thread: { threadId: string; resourceId: string },
  createdAt: Date,
): Record<string, unknown> {
  return {
    id: row.id,
    role: row.role,
    type: 'v2',
    createdAt,
    threadId: thread.threadId,
    resourceId: thread.resourceId,
    content: JSON.parse(row.content) as unknown,
  };
}
