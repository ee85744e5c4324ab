import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';
import type { ParameterDecoratorOptions } from '@nestjs/common';
import { ID_PATTERN, ID_SCHEMA } from '../common/ids';
import {
  ContextSchema,
  FunctionCallSchema,
  MessageRoleSchema,
  MessageSchema,
  ResumeEntrySchema,
  RunAgentInputSchema,
  ToolCallSchema,
  ToolSchema,
} from '../protocol/run-agent-input.dto';
import { type RunAgentInput, runAgentInputProblems } from '../protocol/run-agent-input.schema';

type Schema = Record<string, unknown>;

/** The run request's schemas as components, under the names the document has always given them. */
const COMPONENTS = new Map<object, string>([
  [RunAgentInputSchema, 'RunAgentInputDto'],
  [MessageSchema, 'MessageDto'],
  [MessageRoleSchema, 'MessageRole'],
  [ToolCallSchema, 'ToolCallDto'],
  [FunctionCallSchema, 'FunctionCallDto'],
  [ToolSchema, 'ToolDto'],
  [ContextSchema, 'ContextDto'],
  [ResumeEntrySchema, 'ResumeEntryDto'],
]);

/**
 * The keywords the document shows. The others only check (additionalProperties: false, which drops
 * unknown fields, and the custom keywords): docs/protocol.md#the-run-request tells what they do.
 */
const SHOWN = new Set([
  'type',
  'properties',
  'required',
  'items',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'maxItems',
  'additionalProperties',
  'description',
  'example',
  'default',
]);

const ref = (name: string) => `#/components/schemas/${name}`;

/** A schema Ajv checks as OpenAPI 3.0 shows it: components by reference, null allowed but not shown. */
function shown(schema: Schema, component = false): SchemaObject | ReferenceObject {
  const name = COMPONENTS.get(schema);
  if (name && !component) {
    // An enum through allOf, as Nest's Swagger module refers to one (OpenAPI 3.0 ignores a $ref's siblings).
    return schema.type === 'object' ? { $ref: ref(name) } : { allOf: [{ $ref: ref(name) }] };
  }
  if (schema.openApi) {
    const { openApi, ...rest } = schema;
    return { ...(openApi as SchemaObject), ...shown(rest) };
  }
  const out: Schema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (!SHOWN.has(keyword)) continue;
    if (keyword === 'type') out.type = Array.isArray(value) ? value[0] : value;
    else if (keyword === 'pattern' && value === ID_PATTERN.source) Object.assign(out, ID_SCHEMA);
    else if (keyword === 'properties') out.properties = shownProperties(schema);
    else if (keyword === 'items') out.items = shown(value as Schema);
    else if (keyword === 'additionalProperties' && value === false) continue;
    else if (keyword === 'enum') {
      out.enum = value;
      if ((value as unknown[]).every((v) => typeof v === 'string')) out.type ??= 'string';
    } else out[keyword] = value;
  }
  return out;
}

/** The properties, each field checked on one role only (`if`/`then`) shown with that role's schema. */
function shownProperties(schema: Schema): Record<string, SchemaObject | ReferenceObject> {
  const properties = { ...(schema.properties as Record<string, Schema>) };
  for (const rule of (schema.allOf ?? []) as Array<{ then?: { properties?: Record<string, Schema> } }>) {
    for (const [field, onRole] of Object.entries(rule.then?.properties ?? {}))
      properties[field] = { ...onRole, ...properties[field] };
  }
  return Object.fromEntries(Object.entries(properties).map(([field, s]) => [field, shown(s)]));
}

/** The components of `POST /run`'s body, derived from the schemas RunAgentInputPipe compiles. */
export function runAgentInputComponents(): Record<string, SchemaObject | ReferenceObject> {
  return Object.fromEntries([...COMPONENTS].map(([schema, name]) => [name, shown(schema as Schema, true)]));
}

/** A Standard Schema that also converts to JSON Schema (the Standard JSON Schema interface). */
type BodySchema = NonNullable<ParameterDecoratorOptions['schema']> & {
  '~standard': { jsonSchema: Record<'input' | 'output', () => Record<string, unknown>> };
};

/**
 * `POST /run`'s body as a Standard Schema, for `@Body({ schema })`: Nest's Swagger module documents the
 * body with it and adds its components, in the service's document and in a host app's alike. Its
 * `validate` answers as RunAgentInputPipe, which does the checking.
 */
export const RUN_AGENT_INPUT_BODY: BodySchema = {
  '~standard': {
    version: 1,
    vendor: 'io-bridge',
    validate: (value) => {
      const problems = runAgentInputProblems(value);
      if (!problems) return { value: value as RunAgentInput };
      return { issues: problems.map(({ path, message }) => ({ message, path: path?.split('.') })) };
    },
    jsonSchema: {
      input: () => ({ $ref: ref('RunAgentInputDto'), $defs: runAgentInputComponents() }),
      output: () => ({ $ref: ref('RunAgentInputDto'), $defs: runAgentInputComponents() }),
    },
  },
};
