import { Type } from 'class-transformer';
import {
  ArrayUnique,
  IsArray,
  IsIn,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
  MinLength,
  Validate,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { JsonSchemaObject, MessageContent } from './validators';

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

/** Ids name threads, runs, messages and tool calls in URLs and logs: printable, no spaces. */
const ID = /^[\x21-\x7E]{1,200}$/;
const ID_MESSAGE = '$property must be 1-200 printable ASCII characters without spaces';

export class FunctionCallDto {
  @IsString()
  @Matches(/^[A-Za-z0-9_.:-]{1,128}$/, { message: '$property must be a tool name' })
  name: string;

  /** The call's arguments as JSON text. */
  @IsString()
  @MaxLength(1_000_000)
  arguments: string;
}

export class ToolCallDto {
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  id: string;

  @IsIn(['function'])
  type: 'function';

  @IsObject()
  @ValidateNested()
  @Type(() => FunctionCallDto)
  function: FunctionCallDto;
}

/** An AG-UI 1.0 message; which fields apply depends on `role`. */
export class MessageDto {
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  id: string;

  @IsIn(MESSAGE_ROLES)
  role: MessageRole;

  /** A string, or content parts for `user` and `tool`; an object for `activity`; optional for `assistant`. */
  @Validate(MessageContent)
  content?: unknown;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  name?: string;

  @ValidateIf((m: MessageDto) => m.role === 'assistant' && m.toolCalls !== undefined)
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ToolCallDto)
  toolCalls?: ToolCallDto[];

  @ValidateIf((m: MessageDto) => m.role === 'tool')
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  toolCallId?: string;

  @IsOptional()
  @IsString()
  error?: string;

  @ValidateIf((m: MessageDto) => m.role === 'activity')
  @IsString()
  @MinLength(1)
  activityType?: string;

  @IsOptional()
  @IsString()
  encryptedValue?: string;

  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class ToolDto {
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: '$property must be 1-64 letters, digits, _ or -' })
  name: string;

  @IsString()
  @MaxLength(10_000)
  description: string;

  /** A JSON Schema for the arguments, with `type: "object"`. */
  @IsOptional()
  @Validate(JsonSchemaObject)
  parameters?: Record<string, unknown>;
}

export class ContextDto {
  @IsString()
  @MaxLength(10_000)
  description: string;

  @IsString()
  value: string;
}

/** AG-UI `RunAgentInput`, as CONTRACT section 2 and the seed require it. */
export class RunAgentInputDto {
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  threadId: string;

  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  runId: string;

  @IsOptional()
  @IsString()
  @Matches(ID, { message: ID_MESSAGE })
  parentRunId?: string;

  @IsOptional()
  @IsString()
  protocolVersion?: string;

  /** Client state; accepted and passed on as it is. */
  @IsOptional()
  state?: unknown;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => MessageDto)
  messages: MessageDto[];

  /** Frontend tools the model may call (required by the seed; `[]` for none). */
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ToolDto)
  @ArrayUnique((t: ToolDto) => t?.name, { message: 'tool names must be unique' })
  tools: ToolDto[];

  /** Context entries for the model (required by the seed; `[]` for none). */
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ContextDto)
  context: ContextDto[];

  @IsOptional()
  @IsObject()
  forwardedProps?: Record<string, unknown>;
}
