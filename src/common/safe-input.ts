import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { DomainError, ErrorDetail } from './errors';

/** Deeper JSON than any AG-UI body needs (MAX_JSON_DEPTH's default); class-transformer overflows its stack near 3,000 levels. */
export const MAX_JSON_DEPTH = 64;

// NUL (Postgres text and jsonb cannot hold it) and UTF-16 halves without their partner (jsonb rejects them).
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const pathOf = (parent: string, key: string | number) => (parent ? `${parent}.${key}` : String(key));

/**
 * The first thing in `value` no handler can take: nesting beyond `maxDepth`, or a string (value or
 * key) holding NUL or an unpaired surrogate. Iterative, so hostile depth cannot overflow the stack.
 */
export function unsafeInput(value: unknown, maxDepth = MAX_JSON_DEPTH, root = ''): ErrorDetail | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: root, depth: 0 }];
  while (stack.length) {
    const item = stack.pop()!;
    if (typeof item.value === 'string') {
      if (UNSTORABLE.test(item.value)) {
        return { path: item.path, message: 'must not contain NUL characters or unpaired surrogates' };
      }
      continue;
    }
    if (typeof item.value !== 'object' || item.value === null) continue;
    if (item.depth >= maxDepth) {
      return { path: item.path, message: `nesting deeper than ${maxDepth} levels` };
    }
    const entries = Array.isArray(item.value)
      ? item.value.map((v, i) => [i, v] as const)
      : Object.entries(item.value);
    for (const [key, child] of entries) {
      if (typeof key === 'string' && UNSTORABLE.test(key)) {
        return { path: item.path, message: 'keys must not contain NUL characters or unpaired surrogates' };
      }
      stack.push({ value: child, path: pathOf(item.path, key), depth: item.depth + 1 });
    }
  }
  return undefined;
}

/** Runs before validation on every body, query and route parameter: a 400 instead of a 500 further in. */
@Injectable()
export class SafeInputPipe implements PipeTransform {
  constructor(private readonly maxDepth = MAX_JSON_DEPTH) {}

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const problem = unsafeInput(value, this.maxDepth, metadata.type === 'body' ? '' : (metadata.data ?? ''));
    if (problem) throw new DomainError('VALIDATION_FAILED', 'The request is invalid', [problem]);
    return value;
  }
}
