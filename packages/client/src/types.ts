import type { Context, Interrupt, Message, ResumeEntry, TokenUsage, Tool } from '@ag-ui/core';

/** A server tool of an agent; `requiresApproval` when a run stops for a person's approval first. */
export type AgentTool = { name: string; description?: string; requiresApproval?: boolean };

export type Agent = {
  id: string;
  name: string;
  description?: string;
  modelId: string;
  tools: AgentTool[];
  capabilities: { frontendTools: boolean; structuredOutput: boolean; memory: boolean };
};

export type AgentList = { agents: Agent[]; defaultAgentId: string };

export type Thread = {
  id: string;
  resourceId: string;
  agentId?: string;
  title?: string;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
};

export type ThreadPage = { threads: Thread[]; nextCursor: string | null };

export type CreateThread = {
  id?: string;
  title?: string;
  agentId?: string;
  metadata?: Record<string, unknown>;
  resourceId?: string;
};

export type UpdateThread = { title?: string; metadata?: Record<string, unknown> };

export type ListThreads = { agentId?: string; limit?: number; cursor?: string };

/** A part of a stored message as io.Assist reads it (`format=ui`). */
export type UiMessagePart =
  | { type: 'text'; text: string }
  | { type: 'step-start' }
  | {
      type: 'tool-invocation';
      toolInvocation: {
        state: 'call' | 'result';
        toolCallId: string;
        toolName: string;
        args: unknown;
        result?: unknown;
      };
    };

export type UiMessage = {
  id: string;
  threadId: string;
  role: string;
  createdAt: string;
  content: { format: 2; parts: UiMessagePart[] };
};

export type MessagePage<M> = { messages: M[]; nextCursor: string | null };

export type ListMessages = { limit?: number; before?: string };

export type RunStatus = 'running' | 'waiting_for_tool' | 'finished' | 'error' | 'cancelled';

export type Approval = { toolCallId: string; toolName: string; approved: boolean; by: string; at: string };

/** A run as `GET /runs/:runId` shows it; `usage`, `approvals` and `interrupts` once the server records them. */
export type Run = {
  id: string;
  threadId: string;
  agentId: string;
  status: RunStatus;
  startedAt: string;
  finishedAt?: string;
  error?: { code: string; message: string };
  pendingToolCalls: Array<{ toolCallId: string; toolName: string }>;
  usage?: TokenUsage[];
  approvals?: Approval[];
  interrupts?: Interrupt[];
};

/** One row of `GET /usage`: the caller's tokens for a day, an agent and a model. */
export type UsageRow = {
  day: string;
  agentId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
  runs?: number;
};

export type UsageReport = { usage: UsageRow[] };

export type UsageQuery = { from?: string; to?: string; agentId?: string };

/** A frontend tool's answer: any JSON value or text, or a failure the model reads as a failed call. */
export type ToolResult = { content: unknown } | { error: string };

/**
 * What `run()` sends: AG-UI's RunAgentInput, with `tools` and `context` optional as the server allows.
 * `protocolVersion` defaults to `1.0` so outcomes and usage come on the wire.
 */
export type RunRequest = {
  threadId: string;
  runId: string;
  messages: Message[];
  tools?: Tool[];
  context?: Context[];
  forwardedProps?: Record<string, unknown>;
  resume?: ResumeEntry[];
  protocolVersion?: string;
  state?: unknown;
};
