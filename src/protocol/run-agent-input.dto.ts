import { randomUUID } from 'node:crypto';
import { type SchemaOptions, type Static, type TSchema, type TUnsafe, Type } from '@sinclair/typebox';
import { ID_PATTERN } from '../common/ids';

/**
 * AG-UI `RunAgentInput`, as docs/protocol.md#the-run-request requires it, defined once: Ajv compiles
 * these schemas as they are (run-agent-input.schema.ts), the OpenAPI document shows them
 * (src/openapi/run-agent-input.ts), and the code's types are their `Static`. Beside the JSON Schema
 * keywords they hold annotations Ajv ignores: `example`, and `openApi` where a custom keyword does the
 * check and the document shows a plain shape instead.
 */

export const MESSAGE_ROLES = [
  'user',
  'assistant',
  'system',
  'developer',
  'tool',
  'activity',
  'reasoning',
] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** Tool names as clients send them, MCP style included (`server.tool`, `a/b`); aliased for the model where needed. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_.:/-]{1,128}$/;
export const TOOL_NAME_RULE = '1-128 letters, digits, _ - . : or /';

/** The OpenAPI schema of a field that holds any JSON value. */
export const ANY_JSON_VALUE = {
  oneOf: [
    { type: 'string' },
    { type: 'number' },
    { type: 'boolean' },
    { type: 'object', additionalProperties: true },
    { type: 'array', items: {} },
  ],
  nullable: true,
};

/** Ids name threads, runs, messages and tool calls: see common/ids.ts. */
const Id = (options?: SchemaOptions) => Type.String({ ...options, pattern: ID_PATTERN.source });
const ToolName = (options?: SchemaOptions) => Type.String({ ...options, pattern: TOOL_NAME_PATTERN.source });
/** An object of any keys, kept whole. */
const FreeObject = (options?: SchemaOptions) =>
  Type.Unsafe<Record<string, unknown>>({ ...options, type: 'object', additionalProperties: true });
/**
 * An optional field may be null, as it could when class-validator checked the body. Its type leaves
 * null out, as the DTO classes' did: the code reads null as absent.
 */
const OrNull = <T extends TSchema>(schema: T): TUnsafe<Static<T>> =>
  Type.Unsafe<Static<T>>({ ...schema, type: [schema.type as string, 'null'] });
/** Unknown fields are dropped (Ajv's removeAdditional), never refused: AG-UI clients send extras. */
const Strict = { additionalProperties: false } as const;
/** A field of one role only: required and checked on that role, passed on as it is on the others. */
const onRole = (role: MessageRole, property: string, schema: Record<string, unknown>) => ({
  if: { type: 'object', properties: { role: { const: role } }, required: ['role'] },
  then: { type: 'object', properties: { [property]: schema }, required: [property] },
});

export const MessageRoleSchema = Type.Unsafe<MessageRole>({ enum: [...MESSAGE_ROLES] });

export const FunctionCallSchema = Type.Object(
  {
    name: ToolName({ example: 'get_weather' }),
    arguments: Type.String({
      maxLength: 1_000_000,
      description: "The call's arguments as JSON text",
      example: '{"city":"Paris"}',
    }),
  },
  Strict,
);

export const ToolCallSchema = Type.Object(
  {
    id: Id(),
    type: Type.Unsafe<'function'>({ enum: ['function'] }),
    function: FunctionCallSchema,
  },
  Strict,
);

/** An AG-UI 1.0 message; which fields apply depends on `role`. */
export const MessageSchema = Type.Object(
  {
    id: Id(),
    role: MessageRoleSchema,
    content: Type.Optional(
      Type.Unknown({
        description:
          'A string, or content parts for `user` and `tool`; an object for `activity`; optional for `assistant`',
        example: 'Hello',
        // Checked against the role by the message's `agUiContent` keyword.
        openApi: {
          oneOf: [
            { type: 'string' },
            { type: 'array', items: { type: 'object', additionalProperties: true } },
            { type: 'object', additionalProperties: true },
          ],
        },
      }),
    ),
    name: Type.Optional(OrNull(Type.String({ maxLength: 200 }))),
    toolCalls: Type.Optional(OrNull(Type.Array(ToolCallSchema, { description: 'On `assistant` messages' }))),
    // Checked on its role only (allOf below), typed as that role has it.
    toolCallId: Type.Optional(
      Type.Unsafe<string>({ description: 'Required on `tool` messages: the call it answers' }),
    ),
    error: Type.Optional(OrNull(Type.String({ description: 'On `tool` messages: the tool failed' }))),
    activityType: Type.Optional(Type.Unsafe<string>({ description: 'Required on `activity` messages' })),
    encryptedValue: Type.Optional(OrNull(Type.String())),
    metadata: Type.Optional(OrNull(FreeObject())),
  },
  {
    ...Strict,
    agUiContent: true,
    allOf: [
      onRole('tool', 'toolCallId', Id()),
      onRole('activity', 'activityType', Type.String({ minLength: 1 })),
    ],
  },
);

export const ToolSchema = Type.Object(
  {
    name: ToolName({
      example: 'get_weather',
      description:
        'MCP-style names (`portal.get_positions`, `files/read`) included: a name a provider cannot take is aliased for the model and restored on the wire and in storage',
    }),
    description: Type.Optional(
      OrNull(Type.String({ maxLength: 10_000, description: 'Optional, as in AG-UI' })),
    ),
    parameters: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        description: 'A JSON Schema for the arguments, with `type: "object"`',
        example: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        toolParameters: true,
        openApi: { type: 'object', additionalProperties: true },
      }),
    ),
  },
  Strict,
);

export const ContextSchema = Type.Object(
  {
    description: Type.String({ maxLength: 10_000, example: 'User locale' }),
    value: Type.String({ example: 'fr-FR' }),
  },
  Strict,
);

/** AG-UI 1.0 `ResumeEntry`: the answer to an interrupt of an earlier run (an approval). */
export const ResumeEntrySchema = Type.Object(
  {
    interruptId: Id({ description: 'The id of the interrupt, from `RUN_FINISHED.outcome.interrupts[].id`' }),
    status: Type.Unsafe<'resolved' | 'cancelled'>({
      enum: ['resolved', 'cancelled'],
      description: '`cancelled` declines the tool call',
    }),
    payload: Type.Optional(
      OrNull(
        FreeObject({
          description: 'For an approval: `{approved: true|false, reason?}`',
          example: { approved: true },
        }),
      ),
    ),
  },
  Strict,
);

export const RunAgentInputSchema = Type.Object(
  {
    threadId: Id({ description: 'Created for the caller on its first run', example: 'thread-1' }),
    runId: Id({ description: 'New for every run (409 RUN_ALREADY_EXISTS otherwise)', example: 'run-1' }),
    parentRunId: Type.Optional(OrNull(Id())),
    protocolVersion: Type.Optional(OrNull(Type.String())),
    state: Type.Optional(
      Type.Unknown({ description: 'Client state; accepted and passed on as it is', openApi: ANY_JSON_VALUE }),
    ),
    messages: Type.Array(MessageSchema, {
      description: 'The whole history or only the new message: messages already stored are not stored twice',
      example: [{ id: 'msg-1', role: 'user', content: 'Hello' }],
    }),
    tools: Type.Optional(
      Type.Array(ToolSchema, {
        description: 'Frontend tools the model may call, each name once; `[]` when absent',
        default: [],
        example: [],
        uniqueBy: { key: 'name', message: 'tool names must be unique' },
      }),
    ),
    context: Type.Optional(
      Type.Array(ContextSchema, {
        description: 'Context entries for the model; `[]` when absent',
        default: [],
        example: [],
      }),
    ),
    forwardedProps: Type.Optional(
      OrNull(
        FreeObject({
          description:
            'agentId, resourceId, memoryOptions (or memory), modelSettings, structuredOutput; anything else is tolerated',
          example: { agentId: 'assistant' },
        }),
      ),
    ),
    resume: Type.Optional(
      OrNull(
        Type.Array(ResumeEntrySchema, {
          maxItems: 32,
          description:
            'AG-UI 1.0: answers to interrupts of an earlier run of this thread (approvals), each interrupt once; checked before any stream',
          uniqueBy: { key: 'interruptId', message: 'each interrupt is answered once' },
        }),
      ),
    ),
  },
  Strict,
);

export type MessageDto = Static<typeof MessageSchema>;
export type ToolDto = Static<typeof ToolSchema>;
/** A `RunAgentInput` once validated: `tools` and `context` are there, [] when the client sent none. */
export type RunAgentInputDto = Omit<Static<typeof RunAgentInputSchema>, 'tools' | 'context'> &
  Required<Pick<Static<typeof RunAgentInputSchema>, 'tools' | 'context'>>;

/**
 * The body Swagger UI offers for `POST /run`. Fresh ids on every call (the served document gets a new one
 * per request), and only what a chat turn needs: a generated example would carry a junk `parentRunId`.
 */
export function runExample(): Record<string, unknown> {
  return {
    threadId: 'thread-1',
    runId: `run-${randomUUID()}`,
    messages: [{ id: `msg-${randomUUID()}`, role: 'user', content: 'Hello' }],
    tools: [],
    context: [],
  };
}
