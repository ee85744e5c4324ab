import {
  ArgumentMetadata,
  Inject,
  Injectable,
  PipeTransform,
  ValidationError,
  ValidationPipe,
} from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError, ErrorDetail } from './errors';

/** Deeper JSON than any AG-UI body needs (MAX_JSON_DEPTH's default); class-transformer overflows its stack near 3,000 levels. */
export const MAX_JSON_DEPTH = 64;

// NUL (Postgres text and jsonb cannot hold it) and UTF-16 halves without their partner (jsonb rejects them).
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A value met on the walk: its path is only spelled out for the one that is refused. */
type Visit = { value: unknown; depth: number; key: string | number; parent: Visit | undefined };

const pathOf = (visit: Visit, root: string): string => {
  const keys: Array<string | number> = [];
  for (let at: Visit | undefined = visit; at?.parent; at = at.parent) keys.push(at.key);
  if (root) keys.push(root);
  return keys.reverse().join('.');
};

/**
 * The first thing in `value` no handler can take: nesting beyond `maxDepth`, or a string (value or
 * key) holding NUL or an unpaired surrogate. Iterative, so hostile depth cannot overflow the stack.
 */
export function unsafeInput(value: unknown, maxDepth = MAX_JSON_DEPTH, root = ''): ErrorDetail | undefined {
  const stack: Visit[] = [{ value, depth: 0, key: '', parent: undefined }];
  while (stack.length) {
    const item = stack.pop()!;
    const value = item.value;
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) {
        return {
          path: pathOf(item, root),
          message: 'must not contain NUL characters or unpaired surrogates',
        };
      }
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (item.depth >= maxDepth) {
      return { path: pathOf(item, root), message: `nesting deeper than ${maxDepth} levels` };
    }
    const depth = item.depth + 1;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const child: unknown = value[i];
        // Numbers, booleans and nulls hold nothing to refuse: not pushed.
        if (typeof child === 'string' || (typeof child === 'object' && child !== null)) {
          stack.push({ value: child, depth, key: i, parent: item });
        }
      }
      continue;
    }
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      if (UNSTORABLE.test(key)) {
        return {
          path: pathOf(item, root),
          message: 'keys must not contain NUL characters or unpaired surrogates',
        };
      }
      const child: unknown = (value as Record<string, unknown>)[key];
      if (typeof child === 'string' || (typeof child === 'object' && child !== null)) {
        stack.push({ value: child, depth, key, parent: item });
      }
    }
  }
  return undefined;
}

/** Runs before validation on every body, query and route parameter: a 400 instead of a 500 further in. */
@Injectable()
export class SafeInputPipe implements PipeTransform {
  private readonly maxDepth: number;

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'limits'>) {
    this.maxDepth = config.limits.maxJsonDepth;
  }

  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const problem = unsafeInput(value, this.maxDepth, metadata.type === 'body' ? '' : (metadata.data ?? ''));
    if (problem) throw new DomainError('VALIDATION_FAILED', 'The request is invalid', [problem]);
    return value;
  }
}

function flatten(errors: ValidationError[], parent = ''): ErrorDetail[] {
  return errors.flatMap((e) => {
    const path = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((message) => ({ path, message }));
    return [...own, ...flatten(e.children ?? [], path)];
  });
}

/**
 * The DTOs' validation, after {@link SafeInputPipe}: unknown fields are dropped, never refused (AG-UI
 * clients send extras), and a refusal is a 400 VALIDATION_FAILED naming up to 50 paths.
 */
@Injectable()
export class RequestValidationPipe extends ValidationPipe {
  constructor() {
    super({
      whitelist: true,
      transform: true,
      exceptionFactory: (errors) =>
        new DomainError('VALIDATION_FAILED', 'The request is invalid', flatten(errors).slice(0, 50)),
    });
  }
}
