import { DomainError } from './errors';

/** What one JSON body may hold, whatever the route: checked right after parsing, before any validation. */
export type BodyLimits = {
  /** Nesting levels. */
  maxDepth: number;
  /** JSON values (objects, arrays, strings, numbers, booleans, nulls) in the whole body. */
  maxValues: number;
  /** Characters in one string, value or key. */
  maxStringLength: number;
};

/** The body limits of the configuration's (MAX_JSON_DEPTH, MAX_JSON_VALUES, MAX_STRING_LENGTH). */
export const bodyLimitsOf = (limits: {
  maxJsonDepth: number;
  maxJsonValues: number;
  maxStringLength: number;
}): BodyLimits => ({
  maxDepth: limits.maxJsonDepth,
  maxValues: limits.maxJsonValues,
  maxStringLength: limits.maxStringLength,
});

/** What a `POST /run` body (AG-UI `RunAgentInput`) may hold. */
export type RunBodyLimits = {
  maxMessages: number;
  maxTools: number;
  maxContext: number;
  /** Content parts in one message. */
  maxContentParts: number;
  /** Keys in `forwardedProps`, at any depth. */
  maxForwardedPropsKeys: number;
};

const pathOf = (parent: string, key: string | number) => (parent ? `${parent}.${key}` : String(key));
const tooLarge = (path: string, message: string) =>
  new DomainError('PAYLOAD_TOO_LARGE', 'The request body is too large', [{ path, message }]);
const invalid = (path: string, message: string) =>
  new DomainError('VALIDATION_FAILED', 'The request is invalid', [{ path, message }]);

/**
 * The first limit `body` breaks, or undefined. It stops at the first value past a limit, so its work is
 * bounded by the limits, not by the body: a body of 100,000 tools costs what `maxValues` values cost.
 */
export function bodyLimitError(body: unknown, limits: BodyLimits): DomainError | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 0 }];
  let values = 0;
  while (stack.length) {
    const { value, path, depth } = stack.pop()!;
    if (++values > limits.maxValues) {
      return tooLarge(path, `the body holds more than ${limits.maxValues} JSON values`);
    }
    if (typeof value === 'string') {
      if (value.length > limits.maxStringLength) {
        return tooLarge(path, `longer than ${limits.maxStringLength} characters`);
      }
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= limits.maxDepth) return invalid(path, `nesting deeper than ${limits.maxDepth} levels`);
    if (Array.isArray(value)) {
      // Counted before they are stacked: a huge array is refused without walking it.
      if (values + stack.length + value.length > limits.maxValues) {
        return tooLarge(path, `the body holds more than ${limits.maxValues} JSON values`);
      }
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], path: pathOf(path, i), depth: depth + 1 });
      }
      continue;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (values + stack.length + keys.length > limits.maxValues) {
      return tooLarge(path, `the body holds more than ${limits.maxValues} JSON values`);
    }
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      if (key.length > limits.maxStringLength) {
        return tooLarge(path, `a key is longer than ${limits.maxStringLength} characters`);
      }
      stack.push({ value: record[key], path: pathOf(path, key), depth: depth + 1 });
    }
  }
  return undefined;
}

const lengthOf = (value: unknown) => (Array.isArray(value) ? value.length : 0);

/** Keys in `value` at any depth, counting no further than `cap`. */
function keysUpTo(value: unknown, cap: number): number {
  let count = 0;
  const stack = [value];
  while (stack.length && count <= cap) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    // Every element: the body's value limit held, and keys inside any of them count.
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    const keys = Object.keys(node);
    count += keys.length;
    for (const key of keys.slice(0, cap + 1)) stack.push((node as Record<string, unknown>)[key]);
  }
  return count;
}

/**
 * The first list of a `RunAgentInput` longer than its limit, or undefined: counted before the body is
 * walked or validated, so the cost of a refusal does not grow with what was sent.
 */
export function runBodyLimitError(body: unknown, limits: RunBodyLimits): DomainError | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const input = body as Record<string, unknown>;
  const counts: Array<[string, number, number, string]> = [
    ['messages', lengthOf(input.messages), limits.maxMessages, 'messages per run'],
    ['tools', lengthOf(input.tools), limits.maxTools, 'tools per run'],
    ['context', lengthOf(input.context), limits.maxContext, 'context entries per run'],
  ];
  for (const [path, count, max, what] of counts) {
    if (count > max) return invalid(path, `at most ${max} ${what}`);
  }
  const messages = Array.isArray(input.messages) ? (input.messages as unknown[]) : [];
  for (const [i, message] of messages.entries()) {
    const parts = lengthOf((message as { content?: unknown } | null)?.content);
    if (parts > limits.maxContentParts) {
      return invalid(`messages.${i}.content`, `at most ${limits.maxContentParts} content parts per message`);
    }
  }
  return undefined;
}

/** `forwardedProps` with more keys than its limit, after the body's own bounds held (so nesting is bounded). */
export function forwardedPropsLimitError(body: unknown, limits: RunBodyLimits): DomainError | undefined {
  const props = (body as { forwardedProps?: unknown } | null)?.forwardedProps;
  if (keysUpTo(props, limits.maxForwardedPropsKeys) > limits.maxForwardedPropsKeys) {
    return tooLarge('forwardedProps', `at most ${limits.maxForwardedPropsKeys} keys`);
  }
  return undefined;
}
