import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Budget } from '../storage/conversation.store';
import { Tool } from '@mastra/core/tools';
import { AgentsService, RegisteredAgent } from '../../agents/agents.service';
import { frontendTool } from '../../agents/tools/run-tools';
import { Principal } from '../../auth/principal';
import { DomainError } from '../../common/errors';
import type { AppConfig } from '../../config/config';
import { APP_CONFIG } from '../../config/config.module';
import { contextToModelMessages, ModelMessage } from '../../threads/agui-to-model';
import { StoredMessage, textOf, toStored } from '../../threads/message-format';
import { RunAgentInputDto, ToolDto } from '../../protocol/run-agent-input.dto';
import { IfBusy, ModelSettings, parseForwardedProps } from './forwarded-props';
import { ClientProtocol, declaresAgUi1 } from '../../protocol/versions';
import { ToolAliases } from '../../protocol/tool-names';
import type { ResumeEntry } from '../../protocol/outcomes';
import { linearTimeSchema } from '../../common/json-schema';

/**
 * A run that passed every check before streaming, with its model input ready. Held for the run's
 * length: the messages it brings (`incoming`, for the claim) and the history the claim returns are
 * not part of it, so an open run does not keep them once the engine has its own copy.
 */
/** A tool the model may call that the engine does not execute (Mastra `clientTools`). */
export type ClientTool = { id: string; description: string; inputSchema: unknown };

export type PreparedRun = {
  runId: string;
  threadId: string;
  /** Which claim of the run this is: 1, or a continuation's attempt (RUN_MAX_ATTEMPTS). */
  attempt: number;
  /** As the request sent it (none: {}): the request context's `forwardedProps`. The rest of the input is not kept. */
  forwardedProps: Record<string, unknown>;
  /** The first user message's text, when the model is to name the thread from it (generateTitle). */
  titleSource?: string;
  principal: Principal;
  agent: RegisteredAgent;
  context: ModelMessage[];
  /** Frontend tools the run waits for inside itself (io-intelligence), by the model's name for them. */
  frontendTools: Record<string, Tool<any, any, any, any, any, any, any>>;
  /**
   * Tools offered to the model without `execute` (Mastra's client tools): the model's step ends at
   * their calls. Frontend tools of an `ag-ui` run (answered in the next run) and the agent's tools
   * that need approval (answered by `resume`). By the model's name.
   */
  clientTools: Record<string, ClientTool>;
  /** The client's names of its frontend tools (either protocol). */
  frontendNames: ReadonlySet<string>;
  /** Tool names as the model knows them and as the client sent them. */
  aliases: ToolAliases;
  /** How the run answers frontend tools (forwardedProps.clientProtocol, else CLIENT_PROTOCOL). */
  clientProtocol: ClientProtocol;
  /** The request declared AG-UI 1.x: outcomes go on the wire. */
  agUi1: boolean;
  /** Answers to interrupts of earlier runs (checked and recorded when the run is claimed). */
  resume?: ResumeEntry[];
  maxSteps: number;
  lastMessages: number;
  /** `memoryOptions.lastMessages` as the request gave it (clamped): an agent's own Memory otherwise keeps its own. */
  requestedLastMessages?: number;
  /**
   * Rows the run's claim added to the thread of an agent with a Mastra memory: the memory's recall
   * (`lastMessages`) reaches that many further back, so it still holds as many earlier messages.
   */
  storedRows?: number;
  /** Messages handed to the model in one call at most (MODEL_MAX_MESSAGES). */
  modelMaxMessages: number;
  modelSettings: ModelSettings;
  /** Store nothing the run brings or produces (memoryOptions.readOnly). */
  readOnly: boolean;
  /** The request names memory (or STORE_ALL_RUNS): its thread is created when missing. */
  memory: boolean;
  /** Part of no thread (no memory named, no thread of the owner): stores nothing but its run record (set when claimed). */
  stateless: boolean;
  /** The owner's token budget and what its ended runs spent in the window, when it has one (set at the claim). */
  budget?: Budget;
  /** Ask the model for the thread's title instead of taking the first user message. */
  generateTitle: boolean;
  structuredOutput?: { schema: Record<string, unknown> };
  /** Unknown forwardedProps keys: the agent's request context. */
  extras: Record<string, unknown>;
  /** How long the run goes on once nobody reads it, for a reader to rejoin (0: it stops at once). */
  disconnectGraceMs: number;
  /** What the request does when its thread has a run in progress (forwardedProps.ifBusy). */
  ifBusy: IfBusy;
};

/** Checks a run request against the limits and resolves its agent, options and tools, before anything is stored. */
@Injectable()
export class RunPreparer {
  private readonly log = new Logger(RunPreparer.name);
  private readonly shadowWarned = new Set<string>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: AgentsService,
  ) {}

  /** The run, and the messages it brings in the stored shape (for its claim). */
  prepare(input: RunAgentInputDto, principal: Principal): { run: PreparedRun; incoming: StoredMessage[] } {
    const { limits } = this.config;
    if (input.messages.length > limits.maxMessages) {
      throw new DomainError('VALIDATION_FAILED', 'Too many messages', [
        { path: 'messages', message: `at most ${limits.maxMessages} messages per run` },
      ]);
    }
    if (input.tools.length > limits.maxTools) {
      throw new DomainError('VALIDATION_FAILED', 'Too many tools', [
        { path: 'tools', message: `at most ${limits.maxTools} tools per run` },
      ]);
    }
    if (input.context.length > limits.maxContext) {
      throw new DomainError('VALIDATION_FAILED', 'Too many context entries', [
        { path: 'context', message: `at most ${limits.maxContext} context entries per run` },
      ]);
    }
    const ids = new Set<string>();
    for (const [i, m] of input.messages.entries()) {
      if (ids.has(m.id)) {
        throw new DomainError('VALIDATION_FAILED', 'Duplicate message id', [
          { path: `messages.${i}.id`, message: `message id '${m.id}' appears twice` },
        ]);
      }
      ids.add(m.id);
    }
    const options = parseForwardedProps(input.forwardedProps, this.config.ceilings, input.threadId);
    const agent = this.agents.get(options.agentId);
    const defaults = agent.definition.defaults;
    const clientProtocol = options.clientProtocol ?? this.config.clientProtocol;
    const aliases = new ToolAliases();
    const run: PreparedRun = {
      runId: input.runId,
      threadId: input.threadId,
      attempt: 1,
      forwardedProps: input.forwardedProps ?? {},
      ...(options.generateTitle ? { titleSource: firstUserText(input) } : {}),
      principal,
      agent,
      context: contextToModelMessages(input.context),
      ...this.tools(agent, input.tools, clientProtocol, aliases),
      frontendNames: new Set(input.tools.map((t) => t.name)),
      aliases,
      clientProtocol,
      agUi1: declaresAgUi1(input.protocolVersion),
      ...(input.resume?.length ? { resume: input.resume } : {}),
      maxSteps: options.maxSteps ?? defaults?.maxSteps ?? limits.maxSteps,
      lastMessages: options.lastMessages ?? defaults?.lastMessages ?? this.config.lastMessages,
      ...(options.lastMessages !== undefined ? { requestedLastMessages: options.lastMessages } : {}),
      modelMaxMessages: this.config.modelMaxMessages,
      modelSettings: { ...defaults?.modelSettings, ...options.modelSettings },
      readOnly: options.readOnly,
      memory: options.namesMemory || this.config.storeAllRuns,
      stateless: false,
      generateTitle: options.generateTitle,
      ...(options.structuredOutput ? { structuredOutput: options.structuredOutput } : {}),
      extras: options.extras,
      ifBusy: options.ifBusy,
      disconnectGraceMs:
        options.disconnectGraceMs ??
        Math.min(this.config.disconnectGrace.defaultMs, this.config.disconnectGrace.maxMs),
    };
    return { run, incoming: input.messages.map((m) => toStored(m as unknown as Record<string, unknown>)) };
  }

  /**
   * Declared tools, except those named like a server tool: the server tool wins (docs/protocol.md#tools).
   * The `io-intelligence` run waits for their results inside itself; the `ag-ui` run ends at their
   * calls. The agent's tools that need approval end the step at their calls in both.
   */
  private tools(
    agent: RegisteredAgent,
    tools: ToolDto[],
    protocol: ClientProtocol,
    aliases: ToolAliases,
  ): Pick<PreparedRun, 'frontendTools' | 'clientTools'> {
    const frontendTools: PreparedRun['frontendTools'] = {};
    const clientTools: PreparedRun['clientTools'] = {};
    for (const [name, tool] of agent.approvalTools) {
      clientTools[name] = { id: name, description: tool.description ?? '', inputSchema: tool.inputSchema };
    }
    for (const tool of tools) {
      if (agent.serverToolNames.has(tool.name)) {
        const key = `${agent.definition.id}/${tool.name}`;
        if (!this.shadowWarned.has(key)) {
          this.shadowWarned.add(key);
          this.log.warn(
            `declared tool '${tool.name}' has the name of a server tool of '${agent.definition.id}'; the server tool runs`,
          );
        }
        continue;
      }
      const name = aliases.add(tool.name);
      if (protocol === 'ag-ui') {
        clientTools[name] = {
          id: name,
          description: tool.description ?? '',
          inputSchema: linearTimeSchema(tool.parameters ?? { type: 'object', properties: {} }),
        };
      } else frontendTools[name] = frontendTool({ ...tool, name });
    }
    return { frontendTools, clientTools };
  }
}

/** The text of the run's first user message ('' when none). */
function firstUserText(input: RunAgentInputDto): string {
  const first = input.messages.find((m) => m.role === 'user');
  return first ? textOf(first.content).trim() : '';
}
