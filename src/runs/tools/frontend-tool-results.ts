import { Injectable, OnModuleInit } from '@nestjs/common';
import { OwnerScope } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import { PgNotifications } from '../../database/pg-notifications.service';
import { ToolCallsRepository, ToolResult } from '../storage/tool-calls.repository';

/**
 * How long a post for a call the run has not registered waits for the registration: the gap between
 * TOOL_CALL_START and the commit is milliseconds, so a call still unknown after this is made up (404).
 */
export const EARLY_RESULT_WAIT_MS = 2000;

/**
 * Frontend tool results (docs/protocol.md#tools), posted to any instance and awaited by the
 * run that holds the call: the posting instance stores the result and NOTIFYs; the holding instance
 * takes the row. A result posted before the run starts waiting (even before it registers the call)
 * is already in the table when the wait begins, so it is not lost. A result for a parked run wakes
 * it here: whoever continues runs listens (`onParkedRunWoken`).
 */
@Injectable()
export class FrontendToolResults implements OnModuleInit {
  private readonly waiters = new Map<string, () => void>();
  private readonly woken = new Set<() => void>();

  constructor(
    private readonly notifications: PgNotifications,
    private readonly toolCalls: ToolCallsRepository,
  ) {}

  onModuleInit(): void {
    this.notifications.on('io_bridge_tool_result', (key) => this.waiters.get(key)?.());
    this.notifications.onReconnect(() => this.waiters.forEach((check) => check()));
  }

  /** `listener` runs when a result posted here woke a parked run: its lease lapsed, to be continued at once. */
  onParkedRunWoken(listener: () => void): void {
    this.woken.add(listener);
  }

  /**
   * Stores a posted result (ToolCallsRepository.submit for its refusals). One for a call the run has
   * not registered yet waits, bounded, for the registration: a made-up call is a 404, and its result
   * is withdrawn so it leaves nothing behind.
   */
  async post(
    runId: string,
    owner: OwnerScope,
    toolCallId: string,
    result: ToolResult,
    registrationWaitMs = EARLY_RESULT_WAIT_MS,
  ): Promise<void> {
    const stored = await this.toolCalls.submit(runId, owner, toolCallId, result);
    if (stored === 'woke') this.woken.forEach((listener) => listener());
    if (stored === 'early' && !(await this.registered(runId, owner, toolCallId, registrationWaitMs))) {
      throw new DomainError('NOT_FOUND', `Tool call '${toolCallId}' not found in run '${runId}'`);
    }
  }

  /** True once the run registers the call (or took the early result); false when it never did, the result withdrawn. */
  private async registered(
    runId: string,
    owner: OwnerScope,
    toolCallId: string,
    timeoutMs: number,
  ): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (let pause = 5; Date.now() < deadline; pause = Math.min(pause * 2, 100)) {
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(pause, Math.max(0, deadline - Date.now()))),
      );
      const registration = await this.toolCalls.registration(runId, owner, toolCallId);
      if (registration !== 'early') return registration === 'registered';
    }
    return !(await this.toolCalls.withdrawEarly(runId, owner, toolCallId));
  }

  /** Resolves with the posted result; rejects with the signal's reason when the run stops first. */
  wait(runId: string, resourceId: string, toolCallId: string, signal: AbortSignal): Promise<ToolResult> {
    const key = `${runId} ${toolCallId}`;
    return new Promise<ToolResult>((resolve, reject) => {
      let settled = false;
      const settle = (done: () => void) => {
        if (settled) return;
        settled = true;
        this.waiters.delete(key);
        signal.removeEventListener('abort', onAbort);
        done();
      };
      const onAbort = () => settle(() => reject(signal.reason as Error));
      const check = () =>
        void this.toolCalls.take(runId, resourceId, toolCallId).then(
          (result) => result && settle(() => resolve(result)),
          (err: Error) => settle(() => reject(err)),
        );
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(key, check);
      check();
    });
  }
}
