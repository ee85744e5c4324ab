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
import { RUN_AGENT_INPUT_BODY, runAgentInputComponents } from './run-agent-input';

type Schema = Record<string, any>;

/** The components clients know, by name, and the schema RunAgentInputPipe checks each with. */
const COMPONENTS: Array<[string, Schema]> = [
  ['RunAgentInputDto', RunAgentInputSchema],
  ['MessageDto', MessageSchema],
  ['MessageRole', MessageRoleSchema],
  ['ToolCallDto', ToolCallSchema],
  ['FunctionCallDto', FunctionCallSchema],
  ['ToolDto', ToolSchema],
  ['ContextDto', ContextSchema],
  ['ResumeEntryDto', ResumeEntrySchema],
];
const nameOf = (schema: Schema) => COMPONENTS.find(([, s]) => s === schema)?.[0];

/** What a client reads of a field in the document, taken from the validator's schema of it. */
const SAME = ['description', 'example', 'default', 'pattern', 'minLength', 'maxLength', 'maxItems', 'enum'];

/** Each [path, keyword, in the document, in the validator's source] for `shown`, the document's schema of `source`. */
function pairs(source: Schema, shown: Schema, path: string): Array<[string, string, unknown, unknown]> {
  const name = nameOf(source);
  if (name && path.includes('.')) {
    const target = shown.$ref ?? shown.allOf?.[0]?.$ref;
    return [[path, '$ref', target, `#/components/schemas/${name}`]];
  }
  // A value a custom keyword checks: the document shows the plain shape the source names instead.
  if (source.openApi) {
    const shape = { ...source.openApi, description: source.description, example: source.example };
    return Object.entries(shape).map(([keyword, value]) => [path, keyword, shown[keyword], value]);
  }
  const out: Array<[string, string, unknown, unknown]> = [];
  // An id's pattern needs Unicode classes; the document spells it without them (common/ids.ts).
  const rules = source.pattern === ID_PATTERN.source ? { ...source, ...ID_SCHEMA } : source;
  for (const keyword of SAME) out.push([path, keyword, shown[keyword], rules[keyword]]);
  // Unknown fields are dropped, not refused: the document shows only the free-form objects' `true`.
  const free = source.additionalProperties === true ? true : undefined;
  out.push([path, 'additionalProperties', shown.additionalProperties, free]);
  // null is taken, as an absent field, but not shown; an enum of strings is a string.
  const type = Array.isArray(source.type) ? source.type[0] : source.type;
  out.push([path, 'type', shown.type, type ?? (source.enum ? 'string' : undefined)]);
  if (source.items) out.push(...pairs(source.items, shown.items ?? {}, `${path}[]`));
  if (source.properties) {
    out.push([path, 'properties', Object.keys(shown.properties ?? {}), Object.keys(source.properties)]);
    out.push([path, 'required', shown.required, source.required]);
    for (const [field, schema] of Object.entries<Schema>(source.properties)) {
      // A field checked on one role only is shown with that role's rules.
      const onRole = (source.allOf ?? []).find((rule: Schema) => rule.then?.properties?.[field]);
      const checked = onRole ? { ...onRole.then.properties[field], ...schema } : schema;
      out.push(...pairs(checked, shown.properties?.[field] ?? {}, `${path}.${field}`));
    }
  }
  return out;
}

describe('the OpenAPI schemas of the run request', () => {
  const document = runAgentInputComponents();

  it('are the components clients know, no more', () => {
    expect(Object.keys(document).sort()).toEqual(COMPONENTS.map(([name]) => name).sort());
  });

  it.each(COMPONENTS)('%s shows what the validator checks, field by field', (name, source) => {
    const shown = pairs(source, document[name], name);
    expect(shown.map(([path, keyword, inDocument]) => [path, keyword, inDocument])).toEqual(
      shown.map(([path, keyword, , inSource]) => [path, keyword, inSource]),
    );
  });

  it('show no keyword that only checks', () => {
    const text = JSON.stringify(document);
    for (const keyword of ['agUiContent', 'toolParameters', 'uniqueBy', 'openApi', 'if', 'then', 'null'])
      expect(text).not.toContain(`"${keyword}"`);
    expect(text).not.toContain('"additionalProperties":false');
  });

  it("are what Nest's Swagger module takes from the body's Standard Schema, which answers as the pipe does", async () => {
    const standard = RUN_AGENT_INPUT_BODY['~standard'];
    expect(standard.jsonSchema.input()).toEqual({
      $ref: '#/components/schemas/RunAgentInputDto',
      $defs: document,
    });
    const body = { threadId: 't', runId: 'r', messages: [] };
    expect(await standard.validate(body)).toEqual({ value: { ...body, tools: [], context: [] } });
    expect(await standard.validate({ runId: 'r', messages: [[]] })).toEqual({
      issues: [
        { path: ['threadId'], message: 'threadId must be a string' },
        { path: ['messages', '0'], message: 'each value in messages must be an object' },
      ],
    });
  });
});
