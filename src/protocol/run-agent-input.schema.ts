import { Injectable, PipeTransform } from '@nestjs/common';
import Ajv, { type ErrorObject } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types';
import { ID_PATTERN, ID_RULE } from '../common/ids';
import { DomainError, type ErrorDetail } from '../common/errors';
import { contentProblem, parametersProblem } from './validators';
import {
  RunAgentInputDto,
  RunAgentInputSchema,
  TOOL_NAME_PATTERN,
  TOOL_NAME_RULE,
} from './run-agent-input.dto';

/**
 * `RunAgentInput` (run-agent-input.dto.ts, the one definition) compiled once by Ajv: checked in a few
 * milliseconds on the largest body the limits allow, where class-transformer + class-validator took
 * tens. Unknown fields are dropped, never refused (AG-UI clients send extras); an optional field may be
 * null, as it could before.
 */

type KeywordCheck = ((...args: [unknown, unknown, unknown?, DataValidationCxt?]) => boolean) & {
  errors?: Array<Partial<ErrorObject>>;
};

/** A keyword whose check returns a problem (a message) or undefined, reported at `instancePath` + `at`. */
function keyword<S, D>(check: (schema: S, data: D) => { at?: string; message: string } | undefined) {
  const validate: KeywordCheck = (schema, data, _parent, cxt) => {
    const problem = check(schema as S, data as D);
    validate.errors = problem
      ? [{ instancePath: `${cxt?.instancePath ?? ''}${problem.at ?? ''}`, message: problem.message }]
      : [];
    return problem === undefined;
  };
  return validate;
}

const ajv = new Ajv({
  allErrors: true,
  // Unknown fields are dropped, never refused; `tools` and `context` are [] when absent.
  removeAdditional: true,
  useDefaults: true,
  allowUnionTypes: true,
  // `parentSchema` on each error: a missing field is reported with its type.
  verbose: true,
  messages: false,
});
// Annotations for the OpenAPI document, which Ajv only has to know.
ajv.addVocabulary(['example', 'openApi']);
ajv.addKeyword({
  keyword: 'agUiContent',
  type: 'object',
  errors: true,
  validate: keyword((_: unknown, message: { role?: unknown; content?: unknown }) => {
    const problem = contentProblem(message.role as string | undefined, message.content);
    return problem === undefined ? undefined : { at: '/content', message: problem };
  }),
});
ajv.addKeyword({
  keyword: 'toolParameters',
  errors: true,
  validate: keyword((_: unknown, parameters: unknown) => {
    if (parameters === undefined || parameters === null) return undefined;
    const problem = parametersProblem(parameters);
    return problem === undefined ? undefined : { message: `parameters ${problem}` };
  }),
});
ajv.addKeyword({
  keyword: 'uniqueBy',
  type: 'array',
  errors: true,
  validate: keyword((rule: { key: string; message: string }, items: unknown[]) => {
    const seen = new Set<unknown>();
    for (const item of items) {
      const value = (item as Record<string, unknown> | null)?.[rule.key];
      if (seen.has(value)) return { message: rule.message };
      seen.add(value);
    }
    return undefined;
  }),
});
const validate = ajv.compile(RunAgentInputSchema);

const PATTERN_RULES: Record<string, string> = {
  [ID_PATTERN.source]: ID_RULE,
  [TOOL_NAME_PATTERN.source]: TOOL_NAME_RULE,
};
const A_TYPE: Record<string, string> = { string: 'a string', object: 'an object', array: 'an array' };
/** `['string', 'null']` reads as its first type: null is only allowed, never asked for. */
const aType = (type: unknown) => A_TYPE[String(Array.isArray(type) ? type[0] : type)];

/** What an Ajv error says, in class-validator's words (what clients read before), after the field's name. */
function ruleOf(e: ErrorObject, field: string | undefined): string | undefined {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'type':
      return `must be ${aType(params.type) ?? String(params.type)}`;
    case 'required': {
      // With `verbose`, the schema holding `required`: the missing field's type names what is expected.
      const properties = (e.parentSchema as { properties?: Record<string, { type?: unknown }> }).properties;
      const type = aType(properties?.[field!]?.type);
      return type ? `must be ${type}` : 'is required';
    }
    case 'enum':
      return `must be one of the following values: ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'pattern':
      return `must be ${PATTERN_RULES[params.pattern as string] ?? `like ${String(params.pattern)}`}`;
    case 'maxLength':
      return `must be shorter than or equal to ${String(params.limit)} characters`;
    case 'minLength':
      return `must be longer than or equal to ${String(params.limit)} characters`;
    case 'maxItems':
      return `must contain no more than ${String(params.limit)} elements`;
    default:
      // The custom keywords' messages are whole sentences.
      return undefined;
  }
}

/** An Ajv error as the envelope's detail: a dotted path (`messages.0.role`) and a message naming the field. */
function detailOf(e: ErrorObject): ErrorDetail {
  const segments = e.instancePath ? e.instancePath.slice(1).split('/') : [];
  if (e.keyword === 'required') segments.push((e.params as { missingProperty: string }).missingProperty);
  const path = segments.map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~')).join('.');
  const field = segments.at(-1);
  const name =
    field === undefined ? 'the body' : /^\d+$/.test(field) ? `each value in ${segments.at(-2)}` : field;
  const rule = ruleOf(e, field);
  const message = rule ? `${name} ${rule}` : (e.message ?? `${name} is invalid`);
  return path ? { path, message } : { message };
}

/**
 * Checks a parsed `POST /run` body in place: unknown fields dropped, `tools` and `context` defaulted.
 * Returns what is wrong (at most `max` details), or undefined when the body is a `RunAgentInput`.
 */
export function runAgentInputProblems(body: unknown, max = 50): ErrorDetail[] | undefined {
  if (validate(body)) return undefined;
  // `if` only says its `then` failed; the `then` errors name the field.
  return (validate.errors ?? [])
    .filter((e) => e.keyword !== 'if')
    .slice(0, max)
    .map(detailOf);
}

/**
 * The body of `POST /run` once RunAgentInputPipe passed it: a plain object of the schema's `Static`
 * type. A type, not a class, so that the global ValidationPipe (class-validator) leaves it alone.
 */
export type RunAgentInput = RunAgentInputDto;

/** `POST /run`'s body pipe: a 400 VALIDATION_FAILED naming each problem, as the ValidationPipe's. */
@Injectable()
export class RunAgentInputPipe implements PipeTransform<unknown, RunAgentInput> {
  transform(value: unknown): RunAgentInput {
    const problems = runAgentInputProblems(value);
    if (problems) throw new DomainError('VALIDATION_FAILED', 'The request is invalid', problems);
    return value as RunAgentInput;
  }
}
