import type { AguiEvent } from '../../protocol/agui-events';
import type { MastraChunk } from '../events/mastra-to-agui';
import type { ReportedResult } from '../events/lifecycle-guard';
import type { PreparedRun } from '../prepare/run-preparer';
import type { ApprovalRequest } from '../storage/interrupts.repository';
import type { ToolCallsRepository } from '../storage/tool-calls.repository';
import type { ChunkScreen } from './screen-tool-calls';
import { ReportedResults } from './reported-results';

/** A tool call the model made in this run: its client name, arguments and assistant message. */
type ModelCall = { toolName: string; args: unknown; messageId?: string };

/**
 * The tool calls of one run: which the model made, which got a result, which the run registered for
 * a frontend result, and the results the tools reported themselves (for the guard to place after
 * their TOOL_CALL_END). Sets and maps are made on first use: most runs call no tool.
 */
export class RunToolCalls implements ChunkScreen {
  private frontendCalls: Set<string> | undefined;
  private reported: Set<string> | undefined;
  private calls: Map<string, ModelCall> | undefined;
  private resulted: Set<string> | undefined;
  readonly results = new ReportedResults();

  constructor(
    private readonly run: PreparedRun,
    private readonly toolCalls: ToolCallsRepository,
  ) {}

  /**
   * Mastra's copy of a result a tool reported itself is dropped (false); a frontend tool call goes
   * on once registered (the promise); a frontend call Mastra refused (arguments not matching the
   * schema) is abandoned.
   */
  screen(chunk: MastraChunk): boolean | Promise<void> {
    const p = chunk.payload ?? {};
    if (chunk.type === 'tool-result' || chunk.type === 'tool-error') {
      (this.resulted ??= new Set()).add(p.toolCallId);
      if (this.reported?.has(p.toolCallId)) return false;
      if (this.frontendCalls?.has(p.toolCallId)) this.abandon(p.toolCallId);
    }
    if (chunk.type === 'tool-call') {
      // Its TOOL_CALL_START may have been shown first (the call's input streamed): keep its message.
      const shown = this.calls?.get(p.toolCallId);
      (this.calls ??= new Map()).set(p.toolCallId, {
        toolName: this.run.aliases.client(p.toolName),
        args: p.args,
        messageId: shown?.messageId,
      });
      if (this.run.frontendTools[p.toolName] !== undefined)
        return this.registerFrontendCall(p.toolCallId, p.toolName);
    }
    return true;
  }

  /** The chunk with the tool's name as the client knows it (the model may know an alias). */
  clientNamed(chunk: MastraChunk): MastraChunk {
    const name: unknown = chunk.payload?.toolName;
    if (this.run.aliases.empty || typeof name !== 'string') return chunk;
    const client = this.run.aliases.client(name);
    return client === name ? chunk : { ...chunk, payload: { ...chunk.payload, toolName: client } };
  }

  /** An event shown: the assistant message of each tool call is kept for an approval request. */
  shown(event: AguiEvent): void {
    if (event.type !== 'TOOL_CALL_START') return;
    const call = this.calls?.get(event.toolCallId);
    if (call) call.messageId = event.parentMessageId;
    else
      (this.calls ??= new Map()).set(event.toolCallId, {
        toolName: event.toolCallName,
        args: {},
        messageId: event.parentMessageId,
      });
  }

  /** A tool's own result, the moment it exists. */
  report(result: ReportedResult): void {
    (this.reported ??= new Set()).add(result.toolCallId);
    this.results.next(result);
  }

  /**
   * The calls of the model's last step nobody answered: those needing approval (they stop the run
   * with an interrupt) and the frontend calls of an `ag-ui` run (the client answers them next run).
   */
  unanswered(): { pending: string[]; approvals: ApprovalRequest[] } {
    const pending: string[] = [];
    const approvals: ApprovalRequest[] = [];
    for (const [toolCallId, call] of this.calls ?? []) {
      if (this.resulted?.has(toolCallId) || this.reported?.has(toolCallId)) continue;
      if (this.run.agent.approvalTools.has(call.toolName)) {
        approvals.push({
          toolCallId,
          toolName: call.toolName,
          args: call.args ?? {},
          messageId: call.messageId,
        });
      } else if (this.run.clientProtocol === 'ag-ui' && this.run.frontendNames.has(call.toolName))
        pending.push(toolCallId);
    }
    return { pending, approvals };
  }

  /** Recorded before TOOL_CALL_END goes out; a result posted earlier (on START) was kept and is claimed here. */
  private async registerFrontendCall(toolCallId: string, toolName: string): Promise<void> {
    const { runId, principal } = this.run;
    await this.toolCalls.register(runId, principal.resourceId, toolCallId, toolName);
    (this.frontendCalls ??= new Set()).add(toolCallId);
  }

  private abandon(toolCallId: string): void {
    void this.toolCalls
      .abandon(this.run.runId, this.run.principal.resourceId, toolCallId)
      .catch(() => undefined);
  }
}
