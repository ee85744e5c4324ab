import { Frame } from './sse';

function hasNull(value: unknown): boolean {
  if (value === null) return true;
  if (typeof value === 'object') return Object.values(value).some(hasNull);
  return false;
}

/** Asserts the guarantees of docs/protocol.md#the-stream on a parsed stream; throws naming the first broken rule. */
export function assertStreamRules(frames: Frame[], ids: { threadId: string; runId: string }): void {
  const fail = (rule: string, i: number) => {
    throw new Error(`${rule} (event ${i + 1}: ${JSON.stringify(frames[i]?.event)})`);
  };
  if (!frames.length) throw new Error('empty stream');
  const openText = new Set<string>();
  const openCalls = new Map<string, string>();
  const started = new Set<string>();
  let terminal = -1;
  frames.forEach(({ id, event }, i) => {
    if (id !== i + 1) fail('ids count from 1', i);
    if (!Number.isInteger(event.timestamp)) fail('integer timestamp', i);
    if (hasNull(event)) fail('no nulls', i);
    if (terminal >= 0) fail('nothing after the terminal event', i);
    if ((i === 0) !== (event.type === 'RUN_STARTED')) fail('RUN_STARTED first and only first', i);
    switch (event.type) {
      case 'RUN_STARTED':
        if (event.threadId !== ids.threadId || event.runId !== ids.runId) fail('echo threadId and runId', i);
        break;
      case 'TEXT_MESSAGE_START':
        if (started.has(event.messageId) || event.role !== 'assistant') fail('unique assistant message', i);
        started.add(event.messageId);
        openText.add(event.messageId);
        break;
      case 'TEXT_MESSAGE_CONTENT':
        if (!openText.has(event.messageId)) fail('content for an open message', i);
        if (typeof event.delta !== 'string' || !event.delta) fail('non-empty delta', i);
        break;
      case 'TEXT_MESSAGE_END':
        if (!openText.delete(event.messageId)) fail('end of an open message', i);
        break;
      case 'TOOL_CALL_START':
        if (openCalls.has(event.toolCallId) || !event.parentMessageId) fail('tool call start', i);
        openCalls.set(event.toolCallId, '');
        break;
      case 'TOOL_CALL_ARGS':
        if (!openCalls.has(event.toolCallId)) fail('args of an open call', i);
        openCalls.set(event.toolCallId, openCalls.get(event.toolCallId)! + event.delta);
        break;
      case 'TOOL_CALL_END': {
        const args = openCalls.get(event.toolCallId);
        if (args === undefined) fail('end of an open call', i);
        const parsed = JSON.parse(args!);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          fail('args are a JSON object', i);
        openCalls.delete(event.toolCallId);
        break;
      }
      case 'RUN_FINISHED':
        if (event.threadId !== ids.threadId || event.runId !== ids.runId) fail('echo threadId and runId', i);
        terminal = i;
        break;
      case 'RUN_ERROR':
        if (typeof event.code !== 'string' || typeof event.message !== 'string')
          fail('RUN_ERROR code and message', i);
        terminal = i;
        break;
    }
    if (terminal === i && (openText.size || openCalls.size))
      fail('everything closed before the terminal event', i);
  });
  if (terminal !== frames.length - 1) throw new Error('the stream does not end with a terminal event');
}
