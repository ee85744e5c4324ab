import Ajv, { type Options, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import Ajv2020 from 'ajv/dist/2020';
import { toStandardSchema, type StandardSchemaWithJSON } from '@mastra/core/schema';
import { RE2JS } from 're2js';

/**
 * Client JSON Schemas (a frontend tool's `parameters`, `forwardedProps.structuredOutput.schema`):
 * checked once before the run, then evaluated with RE2 (linear time) instead of V8's backtracking
 * RegExp, so a pattern such as `^(a+)+$` cannot stall the event loop for every other request.
 * RE2 has no backreferences and no lookaround: a schema using them is refused with a 400.
 */

/** Ajv's regular-expression engine, backed by RE2JS: JS syntax translated, then matched in linear time. */
export const re2RegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
    // Ajv keys compiled patterns by toString(): it must differ per pattern.
    return { test: (s: string) => re.test(s), toString: () => `re2:${pattern}` };
  },
  // Read only by Ajv's standalone code generation, which this service never uses.
  { code: 're2js' },
);

/** Why `pattern` cannot run on RE2, or undefined when it can. */
export function re2Problem(pattern: string): string | undefined {
  try {
    re2RegExp(pattern, '');
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : 'not a regular expression';
  }
}

const OPTIONS: Options = {
  // As Mastra's own JSON Schema validator: unknown keywords and formats are ignored, every error reported.
  strict: false,
  allErrors: true,
  // Ignored formats would otherwise print a warning per client schema.
  logger: false,
  code: { regExp: re2RegExp },
};

const is2020 = (schema: Record<string, unknown>) =>
  typeof schema.$schema === 'string' && schema.$schema.includes('2020-12');
const newAjv = (schema: Record<string, unknown>): Ajv =>
  is2020(schema) ? new Ajv2020(OPTIONS) : new Ajv(OPTIONS);
const metaValidators = { draft7: new Ajv(OPTIONS), draft2020: new Ajv2020(OPTIONS) };

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose values are data, not schemas: a `pattern` inside them is never compiled. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);
const pointer = (path: string[]) =>
  path.map((p) => `/${p.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/**
 * The first `pattern` value or `patternProperties` key RE2 cannot run, with its JSON Pointer. Every
 * pattern Ajv would compile sits under one of those two names, so looking at all of them is complete.
 */
function unsupportedPattern(schema: Record<string, unknown>): string | undefined {
  const stack: Array<{ node: unknown; path: string[] }> = [{ node: schema, path: [] }];
  while (stack.length) {
    const { node, path } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if (!Array.isArray(node) && DATA_KEYWORDS.has(key)) continue;
      const at = [...path, key];
      const patterns =
        key === 'pattern' && typeof value === 'string'
          ? [{ pattern: value, where: pointer(at) }]
          : key === 'patternProperties' && isPlainObject(value)
            ? Object.keys(value).map((k) => ({
                pattern: k,
                where: `${pointer(at)} key ${JSON.stringify(k)}`,
              }))
            : [];
      for (const { pattern, where } of patterns) {
        const problem = re2Problem(pattern);
        if (problem) {
          return `${where}: the pattern is not supported (${problem}); patterns run on RE2, without backreferences or lookaround`;
        }
      }
      stack.push({ node: value, path: at });
    }
  }
  return undefined;
}

/**
 * Why `schema` is not a JSON Schema object a client may send, or undefined when it is one: valid
 * against its meta-schema (draft-07, or 2020-12 when `$schema` says so), every pattern RE2 syntax.
 */
export function jsonSchemaProblem(schema: unknown): string | undefined {
  if (!isPlainObject(schema)) return 'must be a JSON Schema object';
  const ajv = is2020(schema) ? metaValidators.draft2020 : metaValidators.draft7;
  try {
    if (ajv.validateSchema(schema) !== true) {
      const errors = (ajv.errors ?? []).slice(0, 3);
      return errors.map((e) => `${e.instancePath || '/'}: ${e.message ?? 'is invalid'}`).join('; ');
    }
  } catch {
    // Ajv throws for a `$schema` it does not know, or a schema too deep to walk.
    return 'must be a draft-07 or 2020-12 JSON Schema';
  }
  return unsupportedPattern(schema);
}

/** Ajv's "/a/0/b~1c" as a Standard Schema path: ['a', 0, 'b/c']. */
function pathOf(instancePath: string): Array<string | number> {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((part) =>
      /^(0|[1-9]\d*)$/.test(part) ? Number(part) : part.replaceAll('~1', '/').replaceAll('~0', '~'),
    );
}

/**
 * The schema Mastra gets for a client JSON Schema (tool input, structured output): shown to the
 * model exactly as Mastra shows a plain JSON Schema, validated by our Ajv with RE2 patterns.
 */
export function linearTimeSchema(schema: Record<string, unknown>): StandardSchemaWithJSON {
  const shown = toStandardSchema(schema) as StandardSchemaWithJSON;
  let validate: ValidateFunction | undefined;
  return {
    '~standard': {
      ...shown['~standard'],
      validate: (value: unknown) => {
        try {
          // Compiled on first use, in an Ajv of its own: a client's `$id` never meets another's.
          validate ??= newAjv(schema).compile(schema);
        } catch (err) {
          return { issues: [{ message: `Schema validation error: ${(err as Error).message}` }] };
        }
        if (validate(value)) return { value };
        return {
          issues: (validate.errors ?? []).map((e) => ({
            message: e.message ?? 'Validation error',
            path: pathOf(e.instancePath),
          })),
        };
      },
    },
  };
}
