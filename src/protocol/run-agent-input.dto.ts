import { randomUUID } from 'node:crypto';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ID_SCHEMA } from '../common/ids';

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

/** Ids name threads, runs, messages and tool calls: see common/ids.ts. */
const ID_PROPERTY = ID_SCHEMA;

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

export class FunctionCallDto {
  @ApiProperty({ pattern: TOOL_NAME_PATTERN.source, example: 'get_weather' })
  name: string;

  @ApiProperty({
    maxLength: 1_000_000,
    description: "The call's arguments as JSON text",
    example: '{"city":"Paris"}',
  })
  arguments: string;
}

export class ToolCallDto {
  @ApiProperty(ID_PROPERTY)
  id: string;

  @ApiProperty({ enum: ['function'] })
  type: 'function';

  @ApiProperty({ type: FunctionCallDto })
  function: FunctionCallDto;
}

/** An AG-UI 1.0 message; which fields apply depends on `role`. */
export class MessageDto {
  @ApiProperty(ID_PROPERTY)
  id: string;

  @ApiProperty({ enum: MESSAGE_ROLES, enumName: 'MessageRole' })
  role: MessageRole;

  @ApiPropertyOptional({
    description:
      'A string, or content parts for `user` and `tool`; an object for `activity`; optional for `assistant`',
    oneOf: [
      { type: 'string' },
      { type: 'array', items: { type: 'object', additionalProperties: true } },
      { type: 'object', additionalProperties: true },
    ],
    example: 'Hello',
  })
  content?: unknown;

  @ApiPropertyOptional({ maxLength: 200 })
  name?: string;

  @ApiPropertyOptional({ type: [ToolCallDto], description: 'On `assistant` messages' })
  toolCalls?: ToolCallDto[];

  @ApiPropertyOptional({ ...ID_PROPERTY, description: 'Required on `tool` messages: the call it answers' })
  toolCallId?: string;

  @ApiPropertyOptional({ description: 'On `tool` messages: the tool failed' })
  error?: string;

  @ApiPropertyOptional({ minLength: 1, description: 'Required on `activity` messages' })
  activityType?: string;

  @ApiPropertyOptional()
  encryptedValue?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  metadata?: Record<string, unknown>;
}

export class ToolDto {
  @ApiProperty({
    pattern: TOOL_NAME_PATTERN.source,
    example: 'get_weather',
    description:
      'MCP-style names (`portal.get_positions`, `files/read`) included: a name a provider cannot take is aliased for the model and restored on the wire and in storage',
  })
  name: string;

  @ApiPropertyOptional({ maxLength: 10_000, description: 'Optional, as in AG-UI' })
  description?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'A JSON Schema for the arguments, with `type: "object"`',
    example: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  })
  parameters?: Record<string, unknown>;
}

export class ContextDto {
  @ApiProperty({ maxLength: 10_000, example: 'User locale' })
  description: string;

  @ApiProperty({ example: 'fr-FR' })
  value: string;
}

/** AG-UI 1.0 `ResumeEntry`: the answer to an interrupt of an earlier run (an approval). */
export class ResumeEntryDto {
  @ApiProperty({
    ...ID_PROPERTY,
    description: 'The id of the interrupt, from `RUN_FINISHED.outcome.interrupts[].id`',
  })
  interruptId: string;

  @ApiProperty({ enum: ['resolved', 'cancelled'], description: '`cancelled` declines the tool call' })
  status: 'resolved' | 'cancelled';

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'For an approval: `{approved: true|false, reason?}`',
    example: { approved: true },
  })
  payload?: Record<string, unknown>;
}

/**
 * AG-UI `RunAgentInput`, as docs/protocol.md#the-run-request requires it: its OpenAPI shape and its type.
 * A body is checked by the compiled schema of run-agent-input.schema.ts (RunAgentInputPipe), which
 * keeps the same rules.
 */
export class RunAgentInputDto {
  @ApiProperty({
    ...ID_PROPERTY,
    description: 'Created for the caller on its first run',
    example: 'thread-1',
  })
  threadId: string;

  @ApiProperty({
    ...ID_PROPERTY,
    description: 'New for every run (409 RUN_ALREADY_EXISTS otherwise)',
    example: 'run-1',
  })
  runId: string;

  @ApiPropertyOptional(ID_PROPERTY)
  parentRunId?: string;

  @ApiPropertyOptional()
  protocolVersion?: string;

  @ApiPropertyOptional({ ...ANY_JSON_VALUE, description: 'Client state; accepted and passed on as it is' })
  state?: unknown;

  @ApiProperty({
    type: [MessageDto],
    description: 'The whole history or only the new message: messages already stored are not stored twice',
    example: [{ id: 'msg-1', role: 'user', content: 'Hello' }],
  })
  messages: MessageDto[];

  @ApiPropertyOptional({
    type: [ToolDto],
    description: 'Frontend tools the model may call, each name once; `[]` when absent',
    default: [],
    example: [],
  })
  tools: ToolDto[];

  @ApiPropertyOptional({
    type: [ContextDto],
    description: 'Context entries for the model; `[]` when absent',
    default: [],
    example: [],
  })
  context: ContextDto[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'agentId, resourceId, memoryOptions (or memory), modelSettings, structuredOutput; anything else is tolerated',
    example: { agentId: 'assistant' },
  })
  forwardedProps?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: [ResumeEntryDto],
    maxItems: 32,
    description:
      'AG-UI 1.0: answers to interrupts of an earlier run of this thread (approvals), each interrupt once; checked before any stream',
  })
  resume?: ResumeEntryDto[];
}

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
