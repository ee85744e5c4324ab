import { ApiExtraModels, ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { ANY_JSON_VALUE } from '../../protocol/run-agent-input.dto';
import { ID_MESSAGE, ID_PATTERN, ID_SCHEMA } from '../../common/ids';

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const RESOURCE_ID_QUERY = {
  description:
    'The owner scope with AUTH_MODE=none; with authentication, only an ADMIN_ROLE caller may name another owner (read only)',
};
const METADATA = { type: 'object', additionalProperties: true } as const;

export class CreateThreadDto {
  @ApiPropertyOptional({
    ...ID_SCHEMA,
    description:
      'The thread id; generated when absent. The same id again by the same owner returns the thread (200)',
  })
  @IsOptional()
  @IsString()
  @Matches(ID_PATTERN, { message: ID_MESSAGE })
  id?: string;

  @ApiPropertyOptional({ maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  title?: string;

  @ApiPropertyOptional({ pattern: AGENT_ID.source, example: 'assistant' })
  @IsOptional()
  @IsString()
  @Matches(AGENT_ID)
  agentId?: string;

  @ApiPropertyOptional(METADATA)
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class UpdateThreadDto {
  @ApiPropertyOptional({ maxLength: 500, example: 'Renamed thread' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  title?: string;

  @ApiPropertyOptional({ ...METADATA, description: 'Replaces the metadata as a whole' })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class ListThreadsQueryDto {
  @ApiPropertyOptional({ pattern: AGENT_ID.source, description: "Only this agent's threads" })
  @IsOptional()
  @IsString()
  @Matches(AGENT_ID)
  agentId?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ maxLength: 1000, description: '`nextCursor` of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  cursor?: string;

  @ApiPropertyOptional(RESOURCE_ID_QUERY)
  @IsOptional()
  @IsString()
  resourceId?: string;
}

export class ListMessagesQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 500,
    default: 100,
    description: 'The latest `limit` messages, oldest first',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ maxLength: 1000, description: '`nextCursor` of the previous page: older messages' })
  @IsOptional()
  @IsString()
  @MaxLength(1000)
  before?: string;

  @ApiPropertyOptional({
    enum: ['ui', 'agui'],
    default: 'ui',
    description:
      '`ui`: parts as io.Assist reads them; `agui`: AG-UI messages, replayable in RunAgentInput.messages',
  })
  @IsOptional()
  @IsIn(['ui', 'agui'])
  format?: 'ui' | 'agui';

  @ApiPropertyOptional(RESOURCE_ID_QUERY)
  @IsOptional()
  @IsString()
  resourceId?: string;
}

/** A thread (docs/protocol.md#routes). */
export class ThreadView {
  @ApiProperty({ example: 'thread-1' })
  id: string;

  @ApiProperty({ description: 'The owner', example: 'anonymous' })
  resourceId: string;

  @ApiPropertyOptional({ example: 'assistant' })
  agentId?: string;

  @ApiPropertyOptional()
  title?: string;

  @ApiProperty(METADATA)
  metadata: Record<string, unknown>;

  @ApiProperty({ format: 'date-time', description: 'ISO-8601' })
  createdAt: string;

  @ApiProperty({ format: 'date-time', description: 'ISO-8601' })
  updatedAt: string;
}

export class ThreadsPage {
  @ApiProperty({ type: [ThreadView], description: 'Newest `updatedAt` first' })
  threads: ThreadView[];

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Pass as `cursor` for the next page; null on the last page',
  })
  nextCursor: string | null;
}

export class ToolInvocationView {
  @ApiProperty({ enum: ['call', 'result'], description: '`result` once the result exists' })
  state: 'call' | 'result';

  @ApiProperty()
  toolCallId: string;

  @ApiProperty()
  toolName: string;

  @ApiProperty({ ...ANY_JSON_VALUE, description: 'The call arguments' })
  args: unknown;

  @ApiPropertyOptional({ ...ANY_JSON_VALUE, description: "The tool's result, with state `result`" })
  result?: unknown;
}

export class UiMessagePartView {
  @ApiProperty({ enum: ['text', 'step-start', 'tool-invocation'] })
  type: 'text' | 'step-start' | 'tool-invocation';

  @ApiPropertyOptional({ description: 'With type `text`' })
  text?: string;

  @ApiPropertyOptional({ type: ToolInvocationView, description: 'With type `tool-invocation`' })
  toolInvocation?: ToolInvocationView;
}

export class UiMessageContentView {
  @ApiProperty({ enum: [2] })
  format: 2;

  @ApiProperty({ type: [UiMessagePartView] })
  parts: UiMessagePartView[];
}

/** A message with `format=ui`: what io.Assist reads. */
export class UiMessageView {
  @ApiProperty()
  id: string;

  @ApiProperty()
  threadId: string;

  @ApiProperty({ example: 'assistant' })
  role: string;

  @ApiProperty({ format: 'date-time', description: 'ISO-8601' })
  createdAt: string;

  @ApiProperty({ type: UiMessageContentView })
  content: UiMessageContentView;
}

@ApiExtraModels(UiMessageView)
export class MessagesPage {
  @ApiProperty({
    type: 'array',
    // anyOf, not oneOf: a UI message also satisfies the looser AG-UI message shape.
    items: { anyOf: [{ $ref: getSchemaPath(UiMessageView) }, { $ref: getSchemaPath('MessageDto') }] },
    description: '`format=ui`: UiMessageView; `format=agui`: the AG-UI message as stored (MessageDto)',
  })
  messages: Record<string, unknown>[];

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Pass as `before` for older messages; null when there are none',
  })
  nextCursor: string | null;
}
