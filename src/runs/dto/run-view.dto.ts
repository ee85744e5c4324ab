import { RUN_STATUSES, type RunStatus } from '../run.entity';
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

/** A run as `GET /runs/:runId` shows it (CONTRACT section 1). */
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
}

/** The answer of the tool-result and cancel routes (202). */
export class AcceptedView {
  @ApiProperty({ enum: [true], example: true })
  accepted: true;
}
