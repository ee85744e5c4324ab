import { randomUUID } from 'node:crypto';
import { AguiEvent, RunErrorCode, UpstreamEvent } from '../../protocol/agui-events';
import { repairJsonObject } from './json-repair';
import type { RunFinishedOutcome } from '../../protocol/outcomes';
import type { TokenUsage } from '../../protocol/usage';

/** JSON text of a value; undefined for what JSON cannot hold (a cycle, a BigInt). */
function safeStringify(value: unknown): string | undefined {
  try {
    return JSON.stringify(value ?? null);
  } catch {
    return undefined;
  }
}

type ToolCallState = { name: string; args: string; ended: boolean; resulted: boolean };

/** A run's first event: the request's ids (the claim stores it as the run's log begins). */
export const runStarted = (threadId: string, runId: string): AguiEvent => ({
  type: 'RUN_STARTED',
  timestamp: Date.now(),
  threadId,
  runId,
});

export type LifecycleOptions = {
  threadId: string;
  runId: string;
  emit: (event: AguiEvent) => void;
  warn?: (message: string) => void;
  newId?: () => string;
  /**
   * The run's log already has its RUN_STARTED (the run's claim stored it, or the replica a continued
   * run goes on from): it is not sent again.
   */
  started?: boolean;
};

/**
 * The one place where the guarantees of docs/protocol.md#the-stream are enforced, whatever the upstream does:
 * RUN_STARTED first; exactly one terminal event and nothing after it; every text message, reasoning
 * message, tool call and step closed before the terminal event; no empty deltas; tool arguments that
 * concatenate to a JSON object; every TOOL_CALL_START names its assistant message.
 */
export class RunLifecycle {
  private state: 'new' | 'open' | 'ended' = 'new';
  private openText: string | undefined;
  private openReasoning: string | undefined;
  private parentMessageId: string | undefined;
  /** Upstream message id → wire id; an id reused after its END, or already naming another message, gets a fresh one. */
  private readonly textIds = new Map<string, string>();
  /** Made on first use, as `toolCalls`: most runs have neither, and an open run holds its lifecycle. */
  private reasoningIds: Map<string, string> | undefined;
  /** Every message id sent so far (text, reasoning, tool result): message ids are unique in a run. */
  private readonly usedMessageIds = new Set<string>();
  private toolCalls: Map<string, ToolCallState> | undefined;
  private readonly openSteps: string[] = [];
  private stepCount = 0;
  private readonly emit: (event: AguiEvent) => void;
  private readonly warn: (message: string) => void;
  private readonly newId: () => string;

  constructor(private readonly options: LifecycleOptions) {
    this.emit = options.emit;
    this.warn = options.warn ?? (() => undefined);
    this.newId = options.newId ?? randomUUID;
    if (options.started) this.state = 'open';
  }

  get ended(): boolean {
    return this.state === 'ended';
  }

  /** Whether TOOL_CALL_END of this call has been emitted (a result may follow it, never precede it). */
  toolCallEnded(toolCallId: string): boolean {
    return this.toolCalls?.get(toolCallId)?.ended === true;
  }

  start(): void {
    if (this.state !== 'new') return;
    this.state = 'open';
    this.emit(runStarted(this.options.threadId, this.options.runId));
  }

  push(event: UpstreamEvent): void {
    if (this.state === 'ended') return;
    if (this.state === 'new') this.start();
    switch (event.type) {
      case 'TEXT_MESSAGE_CONTENT':
        return this.textContent(event.messageId, event.delta);
      case 'TEXT_MESSAGE_START':
        return void this.openTextMessage(event.messageId);
      case 'TEXT_MESSAGE_END':
        if (this.openText !== undefined && this.wireTextId(event.messageId) === this.openText)
          this.closeText();
        return;
      case 'TOOL_CALL_START':
        return this.toolCallStart(event.toolCallId, event.toolCallName, event.parentMessageId);
      case 'TOOL_CALL_ARGS': {
        const call = event.toolCallId === undefined ? undefined : this.toolCalls?.get(event.toolCallId);
        if (call && !call.ended && typeof event.delta === 'string') call.args += event.delta;
        return;
      }
      case 'TOOL_CALL_END':
        return this.toolCallEnd(event.toolCallId, event.args);
      case 'TOOL_CALL_RESULT':
        return this.toolCallResult(event.toolCallId, event.messageId, event.content);
      case 'STEP_STARTED':
        return this.stepStarted(event.stepName);
      case 'STEP_FINISHED':
        return this.stepFinished(event.stepName);
      case 'REASONING_MESSAGE_START':
        return void this.openReasoningMessage(event.messageId);
      case 'REASONING_MESSAGE_CONTENT':
        return this.reasoningContent(event.messageId, event.delta);
      case 'REASONING_MESSAGE_END':
        if (
          this.openReasoning !== undefined &&
          this.wireReasoningId(event.messageId) === this.openReasoning
        ) {
          this.closeReasoning();
        }
        return;
    }
  }

  /** Ends the run with RUN_FINISHED (and its AG-UI 1.0 outcome, if given), closing whatever is open first. */
  finish(result?: unknown, outcome?: RunFinishedOutcome, usage?: TokenUsage[]): void {
    if (!this.beginTerminal()) return;
    this.emit({
      type: 'RUN_FINISHED',
      timestamp: Date.now(),
      threadId: this.options.threadId,
      runId: this.options.runId,
      ...(result !== undefined && result !== null ? { result } : {}),
      ...(outcome ? { outcome } : {}),
      ...(usage?.length ? { usage } : {}),
    });
  }

  /**
   * Tool calls an earlier run of the thread made and ended (an approval answered by `resume`): their
   * TOOL_CALL_RESULT may go out in this run.
   */
  adopt(toolCallIds: Iterable<string>): void {
    for (const id of toolCallIds) {
      if (!this.toolCalls?.has(id))
        (this.toolCalls ??= new Map()).set(id, { name: '', args: '{}', ended: true, resulted: false });
    }
  }

  /** Ends the run with RUN_ERROR, closing whatever is open first. */
  fail(code: RunErrorCode, message: string, usage?: TokenUsage[]): void {
    if (!this.beginTerminal()) return;
    this.emit({
      type: 'RUN_ERROR',
      timestamp: Date.now(),
      message: message || code,
      code,
      ...(usage?.length ? { usage } : {}),
    });
  }

  /** Closes every open tool call, text and reasoning message and step, without ending the run. */
  closeOpen(): void {
    if (this.state !== 'open') return;
    for (const [id, call] of this.toolCalls ?? []) if (!call.ended) this.closeToolCall(id, call, undefined);
    if (this.openText !== undefined) this.closeText();
    if (this.openReasoning !== undefined) this.closeReasoning();
    while (this.openSteps.length) {
      this.emit({ type: 'STEP_FINISHED', timestamp: Date.now(), stepName: this.openSteps.pop()! });
    }
  }

  private beginTerminal(): boolean {
    if (this.state === 'ended') return false;
    if (this.state === 'new') this.start();
    this.closeOpen();
    this.state = 'ended';
    return true;
  }

  private wireTextId(upstreamId: string | undefined): string | undefined {
    return !upstreamId ? this.openText : (this.textIds.get(upstreamId) ?? upstreamId);
  }

  private wireReasoningId(upstreamId: string | undefined): string | undefined {
    return !upstreamId ? this.openReasoning : (this.reasoningIds?.get(upstreamId) ?? upstreamId);
  }

  /** The upstream id when it is usable and unused, otherwise a new one; recorded as used. */
  private freshMessageId(upstreamId: string | undefined): string {
    const usable = upstreamId && !this.usedMessageIds.has(upstreamId) && !this.toolCalls?.has(upstreamId);
    const id = usable ? upstreamId : this.newId();
    this.usedMessageIds.add(id);
    return id;
  }

  private openTextMessage(upstreamId: string | undefined): string {
    const current = this.wireTextId(upstreamId);
    if (this.openText !== undefined) {
      if (current === this.openText) return this.openText;
      this.closeText();
    }
    const wireId = this.freshMessageId(upstreamId);
    if (upstreamId) this.textIds.set(upstreamId, wireId);
    this.openText = wireId;
    this.parentMessageId = wireId;
    this.emit({ type: 'TEXT_MESSAGE_START', timestamp: Date.now(), messageId: wireId, role: 'assistant' });
    return wireId;
  }

  private textContent(upstreamId: string | undefined, delta: string | undefined): void {
    if (typeof delta !== 'string' || delta.length === 0) return;
    let messageId = this.openText;
    if (messageId === undefined || (upstreamId && this.wireTextId(upstreamId) !== messageId)) {
      messageId = this.openTextMessage(upstreamId);
    }
    this.emit({ type: 'TEXT_MESSAGE_CONTENT', timestamp: Date.now(), messageId, delta });
  }

  private closeText(): void {
    const messageId = this.openText!;
    this.openText = undefined;
    this.emit({ type: 'TEXT_MESSAGE_END', timestamp: Date.now(), messageId });
  }

  private openReasoningMessage(upstreamId: string | undefined): string {
    if (this.openReasoning !== undefined) {
      if (this.wireReasoningId(upstreamId) === this.openReasoning) return this.openReasoning;
      this.closeReasoning();
    }
    const messageId = this.freshMessageId(upstreamId);
    if (upstreamId) (this.reasoningIds ??= new Map()).set(upstreamId, messageId);
    this.openReasoning = messageId;
    const timestamp = Date.now();
    this.emit({ type: 'REASONING_START', timestamp, messageId });
    this.emit({ type: 'REASONING_MESSAGE_START', timestamp, messageId, role: 'reasoning' });
    return messageId;
  }

  private reasoningContent(upstreamId: string | undefined, delta: string | undefined): void {
    if (typeof delta !== 'string' || delta.length === 0) return;
    let messageId = this.openReasoning;
    if (messageId === undefined || (upstreamId && this.wireReasoningId(upstreamId) !== messageId)) {
      messageId = this.openReasoningMessage(upstreamId);
    }
    this.emit({ type: 'REASONING_MESSAGE_CONTENT', timestamp: Date.now(), messageId, delta });
  }

  private closeReasoning(): void {
    const messageId = this.openReasoning!;
    this.openReasoning = undefined;
    const timestamp = Date.now();
    this.emit({ type: 'REASONING_MESSAGE_END', timestamp, messageId });
    this.emit({ type: 'REASONING_END', timestamp, messageId });
  }

  private toolCallStart(id: string | undefined, name: string | undefined, parent: string | undefined): void {
    if (!id || !name || this.toolCalls?.has(id)) {
      this.warn(`dropped TOOL_CALL_START without id/name or with a repeated id (${id ?? '-'})`);
      return;
    }
    (this.toolCalls ??= new Map()).set(id, { name, args: '', ended: false, resulted: false });
    const parentMessageId = parent || this.parentMessageId || (this.parentMessageId = this.newId());
    this.emit({
      type: 'TOOL_CALL_START',
      timestamp: Date.now(),
      toolCallId: id,
      toolCallName: name,
      parentMessageId,
    });
  }

  private toolCallEnd(id: string | undefined, parsedArgs: unknown): void {
    const call = id === undefined ? undefined : this.toolCalls?.get(id);
    if (call && !call.ended) this.closeToolCall(id!, call, parsedArgs);
  }

  /** Sends the call's arguments as one delta that is always a JSON object, then TOOL_CALL_END. */
  private closeToolCall(id: string, call: ToolCallState, parsedArgs: unknown): void {
    call.ended = true;
    let json = repairJsonObject(call.args);
    if (json === undefined && parsedArgs !== null && typeof parsedArgs === 'object') {
      json = repairJsonObject(safeStringify(parsedArgs) ?? '');
    }
    if (json === undefined) {
      if (call.args.trim())
        this.warn(`tool call ${id} (${call.name}) streamed invalid JSON arguments; sent {}`);
      json = '{}';
    }
    call.args = json;
    const timestamp = Date.now();
    this.emit({ type: 'TOOL_CALL_ARGS', timestamp, toolCallId: id, delta: json });
    this.emit({ type: 'TOOL_CALL_END', timestamp, toolCallId: id });
  }

  private toolCallResult(id: string | undefined, messageId: string | undefined, content: unknown): void {
    const call = id === undefined ? undefined : this.toolCalls?.get(id);
    if (!call || call.resulted) {
      this.warn(`dropped TOOL_CALL_RESULT for an unknown or answered tool call (${id ?? '-'})`);
      return;
    }
    if (!call.ended) this.closeToolCall(id!, call, undefined);
    call.resulted = true;
    this.emit({
      type: 'TOOL_CALL_RESULT',
      timestamp: Date.now(),
      messageId: this.freshMessageId(messageId),
      toolCallId: id!,
      content:
        typeof content === 'string'
          ? content
          : (safeStringify(content) ?? '{"error":"The tool result could not be serialized"}'),
      role: 'tool',
    });
  }

  private stepStarted(name: string | undefined): void {
    const stepName = name ?? `step-${++this.stepCount}`;
    if (this.openSteps.includes(stepName)) return;
    this.openSteps.push(stepName);
    this.parentMessageId = undefined;
    this.emit({ type: 'STEP_STARTED', timestamp: Date.now(), stepName });
  }

  private stepFinished(name: string | undefined): void {
    const index = name === undefined ? this.openSteps.length - 1 : this.openSteps.lastIndexOf(name);
    if (index < 0) return;
    const [stepName] = this.openSteps.splice(index, 1);
    this.emit({ type: 'STEP_FINISHED', timestamp: Date.now(), stepName });
  }
}
