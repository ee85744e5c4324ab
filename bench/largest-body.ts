import { randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config/config';

/**
 * The largest `POST /run` body the default limits allow: MAX_MESSAGES assistant messages with a tool
 * call each, MAX_TOOLS tools and MAX_CONTEXT entries, as many JSON values as MAX_JSON_VALUES leaves,
 * padded with long strings up to MAX_BODY_BYTES.
 */
export function largestBody(): string {
  const { limits } = loadConfig(process.env);
  const id = () => randomUUID();
  const messages: unknown[] = [];
  for (let i = 0; i < limits.maxMessages - 1; i++) {
    messages.push({
      id: `m${i}-${id()}`,
      role: 'assistant',
      content: 'x',
      toolCalls: [{ id: `c${i}`, type: 'function', function: { name: 'f', arguments: '{}' } }],
    });
  }
  messages.push({ id: id(), role: 'user', content: 'hi' });
  const tools = Array.from({ length: limits.maxTools }, (_, i) => ({
    name: `tool_${i}`,
    description: 'd',
    parameters: { type: 'object', properties: { a: { type: 'string' } } },
  }));
  const context = Array.from({ length: limits.maxContext }, (_, i) => ({ description: `c${i}`, value: 'v' }));
  const body = {
    threadId: id(),
    runId: id(),
    messages,
    tools,
    context,
    forwardedProps: {} as Record<string, unknown>,
  };
  let values = countValues(body);
  // One key is left for the padding below.
  const keys = Math.min(limits.maxForwardedPropsKeys - 1, Math.max(0, limits.maxJsonValues - values - 10));
  for (let i = 0; i < keys; i++) body.forwardedProps[`k${i}`] = i;
  values = countValues(body);
  const room = limits.maxBodyBytes - Buffer.byteLength(JSON.stringify(body)) - 1024;
  if (values < limits.maxJsonValues && room > 0) {
    body.forwardedProps.pad = 'p'.repeat(Math.min(room, limits.maxStringLength));
  }
  return JSON.stringify(body);
}

export function countValues(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 1;
  return 1 + Object.values(value).reduce<number>((n, v) => n + countValues(v), 0);
}
