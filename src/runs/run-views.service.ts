import { Injectable } from '@nestjs/common';
import { idScope, Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import { RunView } from './dto/run-view.dto';
import { InterruptsRepository } from './storage/interrupts.repository';
import { isActiveStatus } from './storage/run.entity';
import { RunsRepository } from './storage/runs.repository';
import { ToolCallsRepository } from './storage/tool-calls.repository';

/** `GET /runs/:runId`: a run as its owner (or whoever `idScope` lets reach it) sees it. */
@Injectable()
export class RunViews {
  constructor(
    private readonly runs: RunsRepository,
    private readonly toolCalls: ToolCallsRepository,
    private readonly interrupts: InterruptsRepository,
  ) {}

  async get(runId: string, principal: Principal): Promise<RunView> {
    const run = await this.runs.findOne(runId, idScope(principal, 'read'));
    if (!run) throw new DomainError('NOT_FOUND', `Run '${runId}' not found`);
    const active = isActiveStatus(run.status);
    return {
      id: run.id,
      threadId: run.threadId,
      agentId: run.agentId,
      status: run.status,
      startedAt: run.startedAt.toISOString(),
      ...(run.finishedAt ? { finishedAt: run.finishedAt.toISOString() } : {}),
      ...(run.errorCode
        ? { error: { code: run.errorCode, message: run.errorMessage ?? run.errorCode } }
        : {}),
      pendingToolCalls: active ? await this.toolCalls.pending(run.id, run.resourceId) : [],
      ...(run.usage ? { usage: run.usage } : {}),
      ...(await this.interruptsOf(run.id, run.resourceId)),
    };
  }

  /** The run's open interrupts and the answers given to them (absent when none). */
  private async interruptsOf(
    runId: string,
    resourceId: string,
  ): Promise<Pick<RunView, 'interrupts' | 'approvals'>> {
    const { interrupts, approvals } = await this.interrupts.ofRun(runId, resourceId);
    return {
      ...(interrupts.length ? { interrupts } : {}),
      ...(approvals.length ? { approvals } : {}),
    };
  }
}
