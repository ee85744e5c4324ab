import { AguiEvent } from '../protocol/agui-events';
import { AguiToolCall, StoredMessage } from './message-format';

/**
 * Builds the messages a run produced from the events it sent, with the ids those events carried:
 * assistant messages with their text and `toolCalls`, tool results, reasoning.
 */
export class MessageCollector {
  private readonly messages = new Map<string, StoredMessage>();
  /** Made on first use: most runs call no tool, and an open run holds its collector. */
  private calls: Map<string, AguiToolCall> | undefined;
  private readonly openText = new Set<string>();

  observe(event: AguiEvent): void {
    switch (event.type) {
      case 'TEXT_MESSAGE_START':
        this.assistant(event.messageId);
        this.openText.add(event.messageId);
        break;
      case 'TEXT_MESSAGE_CONTENT': {
        const m = this.assistant(event.messageId);
        m.content = `${(m.content as string | undefined) ?? ''}${event.delta}`;
        break;
      }
      case 'TEXT_MESSAGE_END':
        this.openText.delete(event.messageId);
        break;
      case 'TOOL_CALL_START': {
        const call: AguiToolCall = {
          id: event.toolCallId,
          type: 'function',
          function: { name: event.toolCallName, arguments: '' },
        };
        (this.calls ??= new Map()).set(event.toolCallId, call);
        const m = this.assistant(event.parentMessageId);
        (m.toolCalls ??= []).push(call);
        break;
      }
      case 'TOOL_CALL_ARGS': {
        const call = this.calls?.get(event.toolCallId);
        if (call) call.function.arguments += event.delta;
        break;
      }
      case 'TOOL_CALL_RESULT':
        this.messages.set(event.messageId, {
          id: event.messageId,
          role: 'tool',
          toolCallId: event.toolCallId,
          content: event.content,
        });
        break;
      case 'REASONING_MESSAGE_START':
        this.messages.set(event.messageId, { id: event.messageId, role: 'reasoning', content: '' });
        break;
      case 'REASONING_MESSAGE_CONTENT': {
        const m = this.messages.get(event.messageId);
        if (m) m.content = `${m.content as string}${event.delta}`;
        break;
      }
      default:
        break;
    }
  }

  /** Text messages started and not yet ended. */
  openTextIds(): Set<string> {
    return new Set(this.openText);
  }

  /** What to store; the text messages named in `interrupted` were cut short by a failure, and say so. */
  produced(interrupted: ReadonlySet<string> = new Set()): StoredMessage[] {
    const out: StoredMessage[] = [];
    for (const m of this.messages.values()) {
      if (m.role === 'assistant' && m.content === undefined && !m.toolCalls?.length) continue;
      const copy: StoredMessage = {
        ...m,
        ...(m.toolCalls
          ? { toolCalls: m.toolCalls.map((c) => ({ ...c, function: { ...c.function } })) }
          : {}),
      };
      for (const call of copy.toolCalls ?? []) if (!call.function.arguments) call.function.arguments = '{}';
      if (interrupted.has(m.id)) copy.metadata = { ...m.metadata, interrupted: true };
      out.push(copy);
    }
    return out;
  }

  private assistant(id: string): StoredMessage {
    let m = this.messages.get(id);
    if (!m) this.messages.set(id, (m = { id, role: 'assistant' }));
    return m;
  }
}
