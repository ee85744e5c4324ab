import { Injectable, PipeTransform } from '@nestjs/common';
import Ajv, { type ErrorObject, type SchemaObject } from 'ajv';
import type { DataValidationCxt } from 'ajv/dist/types';
import { ID_PATTERN, ID_RULE } from '../common/ids';
import { DomainError, type ErrorDetail } from '../common/errors';
import { contentProblem, parametersProblem } from './validators';
import { MESSAGE_ROLES, RunAgentInputDto, TOOL_NAME_PATTERN, TOOL_NAME_RULE } from './run-agent-input.dto';

/**
 * `RunAgentInput` as a JSON Schema, compiled once by Ajv: the same rules the DTO classes show in the
 * OpenAPI document (run-agent-input.dto.ts), checked in a few milliseconds on the largest body the
 * limits allow, where class-transformer + class-validator took tens. Unknown fields are dropped, never
 * refused (AG-UI clients send extras); an optional field may be null, as it could before.
 */

const ID = { type: 'string', pattern: ID_PATTERN.source } as const;
const TOOL_NAME = { type: 'string', pattern: TOOL_NAME_PATTERN.source } as const;
const orNull = (schema: Record<string, unknown>) => ({
  ...schema,
  type: [schema.type as string, 'null'],
});
const OBJECT = { type: 'object' } as const;
/** An object whose unknown keys are dropped (Ajv's removeAdditional), as the ValidationPipe's whitelist did. */
const record = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const listOf = (items: Record<string, unknown>) => ({ type: 'array', items });
/** A field of one role only: required and checked on that role, passed on as it is on the others. */
const onRole = (role: string, property: string, schema: Record<string, unknown>) => ({
  if: { type: 'object', properties: { role: { const: role } }, required: ['role'] },
  then: { type: 'object', properties: { [property]: schema }, required: [property] },
});

const MESSAGE = {
  ...record(
    {
      id: ID,
      role: { enum: MESSAGE_ROLES },
      // Checked against the role by the `agUiContent` keyword.
      content: {},
      name: orNull({ type: 'string', maxLength: 200 }),
      toolCalls: orNull(
        listOf(
          record(
            {
              id: ID,
              type: { enum: ['function'] },
              function: record({ name: TOOL_NAME, arguments: { type: 'string', maxLength: 1_000_000 } }, [
                'name',
                'arguments',
              ]),
            },
            ['id', 'type', 'function'],
          ),
        ),
      ),
      toolCallId: {},
      error: orNull({ type: 'string' }),
      activityType: {},
      encryptedValue: orNull({ type: 'string' }),
      metadata: orNull(OBJECT),
    },
    ['id', 'role'],
  ),
  agUiContent: true,
  allOf: [
    onRole('tool', 'toolCallId', ID),
    onRole('activity', 'activityType', { type: 'string', minLength: 1 }),
  ],
};

export const RUN_AGENT_INPUT_SCHEMA: SchemaObject = record(
  {
    threadId: ID,
    runId: ID,
    parentRunId: orNull(ID),
    protocolVersion: orNull({ type: 'string' }),
    state: {},
    messages: listOf(MESSAGE),
    tools: {
      ...listOf(
        record(
          {
            name: TOOL_NAME,
            description: orNull({ type: 'string', maxLength: 10_000 }),
            parameters: { toolParameters: true },
          },
          ['name'],
        ),
      ),
      uniqueBy: { key: 'name', message: 'tool names must be unique' },
      default: [],
    },
    context: {
      ...listOf(
        record({ description: { type: 'string', maxLength: 10_000 }, value: { type: 'string' } }, [
          'description',
          'value',
        ]),
      ),
      default: [],
    },
    forwardedProps: orNull(OBJECT),
    resume: {
      ...orNull(
        listOf(
          record({ interruptId: ID, status: { enum: ['resolved', 'cancelled'] }, payload: orNull(OBJECT) }, [
            'interruptId',
            'status',
          ]),
        ),
      ),
      maxItems: 32,
      uniqueBy: { key: 'interruptId', message: 'each interrupt is answered once' },
    },
  },
  ['threadId', 'runId', 'messages'],
);

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
const validate = ajv.compile(RUN_AGENT_INPUT_SCHEMA);

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
 * The body of `POST /run` once RunAgentInputPipe passed it: a plain object of the DTO's shape. A type
 * alias, not the class, so that the global ValidationPipe (class-validator) leaves it alone.
 */
export type RunAgentInput = RunAgentInputDto;

/** `@Body(RunAgentInputPipe)`: a 400 VALIDATION_FAILED naming each problem, as the ValidationPipe's. */
@Injectable()
export class RunAgentInputPipe implements PipeTransform<unknown, RunAgentInput> {
  transform(value: unknown): RunAgentInput {
    const problems = runAgentInputProblems(value);
    if (problems) throw new DomainError('VALIDATION_FAILED', 'The request is invalid', problems);
    return value as RunAgentInput;
  }
}
