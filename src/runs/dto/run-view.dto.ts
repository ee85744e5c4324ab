import { RUN_STATUSES, type RunStatus } from '../run.entity';
import { ApiProperty } from '@nestjs/swagger';

export class RunErrorView {
  code: string;
  message: string;
}

export class PendingToolCallView {
  toolCallId: string;
  toolName: string;
}

/** A run as `GET /runs/:runId` shows it (CONTRACT section 1). */
export class RunView {
  id: string;
  threadId: string;
  agentId: string;
  @ApiProperty({ enum: RUN_STATUSES })
  status: RunStatus;
  /** ISO-8601 */
  startedAt: string;
  /** ISO-8601; absent while the run is active */
  finishedAt?: string;
  error?: RunErrorView;
  pendingToolCalls: PendingToolCallView[];
}
