import { RUN_STATUSES, type RunStatus } from '../storage/run.entity';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class RunErrorView {
  @ApiProperty({ example: 'MODEL_ERROR' })
  code: string;

  @ApiProperty()
  message: string;
}

export class PendingToolCallView {
  @ApiProperty()
  toolCallId: string;

  @ApiProperty()
  toolName: string;
}

export class InterruptView {
  @ApiProperty({ description: 'Answer it with `RunAgentInput.resume[].interruptId`' })
  id: string;

  @ApiProperty({ enum: ['tool_approval'] })
  reason: 'tool_approval';

  @ApiProperty()
  toolCallId: string;

  @ApiProperty()
  message: string;

  @ApiProperty({ format: 'date-time' })
  expiresAt: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'What `resume[].payload` holds' })
  responseSchema: Record<string, unknown>;
}

export class ApprovalView {
  @ApiProperty()
  toolCallId: string;

  @ApiProperty({ example: 'publish_note' })
  toolName: string;

  @ApiProperty()
  approved: boolean;

  @ApiProperty({ description: 'The owner (resource) who answered' })
  by: string;

  @ApiProperty({ format: 'date-time' })
  at: string;
}

/** AG-UI 1.0 `TokenUsage`: one provider and model's tokens; cached and reasoning tokens are parts of the totals. */
export class TokenUsageView {
  @ApiPropertyOptional({ example: 'openai' })
  provider?: string;

  @ApiPropertyOptional({ example: 'gpt-4o-mini' })
  model?: string;

  @ApiPropertyOptional({ example: 1200 })
  inputTokens?: number;

  @ApiPropertyOptional({ example: 85 })
  outputTokens?: number;

  @ApiPropertyOptional({ example: 1285 })
  totalTokens?: number;

  @ApiPropertyOptional()
  reasoningTokens?: number;

  @ApiPropertyOptional()
  cachedInputTokens?: number;

  @ApiPropertyOptional()
  cacheWriteInputTokens?: number;
}

/** A run as `GET /runs/:runId` shows it (docs/protocol.md#routes). */
export class RunView {
  @ApiProperty()
  id: string;

  @ApiProperty()
  threadId: string;

  @ApiProperty({ example: 'assistant' })
  agentId: string;

  @ApiProperty({ enum: RUN_STATUSES, enumName: 'RunStatus' })
  status: RunStatus;

  @ApiProperty({ format: 'date-time', description: 'ISO-8601' })
  startedAt: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'ISO-8601; absent while the run is active' })
  finishedAt?: string;

  @ApiPropertyOptional({ type: RunErrorView, description: 'Why the run ended in `error` or `cancelled`' })
  error?: RunErrorView;

  @ApiProperty({ type: [PendingToolCallView], description: 'The frontend tool calls the run waits for' })
  pendingToolCalls: PendingToolCallView[];

  @ApiPropertyOptional({
    type: [TokenUsageView],
    description:
      "The tokens its model calls reported, one entry per provider and model (absent when none); recorded at the run's end",
  })
  usage?: TokenUsageView[];

  @ApiPropertyOptional({
    type: [InterruptView],
    description:
      'Tool calls the run stopped at for approval, not answered yet (AG-UI 1.0 interrupts, for every client)',
  })
  interrupts?: InterruptView[];

  @ApiPropertyOptional({
    type: [ApprovalView],
    description: "The answers given to the run's interrupts: who, when",
  })
  approvals?: ApprovalView[];
}

/** The answer of the tool-result and cancel routes (202). */
export class AcceptedView {
  @ApiProperty({ enum: [true], example: true })
  accepted: true;
}
