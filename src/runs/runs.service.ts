import { Inject, Injectable, Logger } from '@nestjs/common';
import { Observable, Subscriber } from 'rxjs';
import { AgentsService, RegisteredAgent } from '../agents/agents.service';
import { Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { aguiToModelMessages, contextToModelMessages, ModelMessage } from '../threads/agui-to-model';
import { AguiEvent, RunErrorCode } from './agui-events';
import { RunAgentInputDto } from './dto/run-agent-input.dto';
import { MastraChunk, MastraToAgui, Outcome } from './mastra-to-agui';
import { RunLifecycle } from './run-lifecycle';
import { RunEnd, RunsRepository } from './runs.repository';

type PreparedRun = {
  input: RunAgentInputDto;
  principal: Principal;
  agent: RegisteredAgent;
  messages: ModelMessage[];
  context: ModelMessage[];
};

type Ending = { end: RunEnd; terminal: { code: RunErrorCode; message: string } | undefined };

/** Why a run stopped early when it was not the model's doing. */
class StopReason extends Error {
  constructor(
    readonly code: RunErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Starts runs: validates what the stream cannot, records the run, and returns its event Observable. */
@Injectable()
export class RunsService {
  private readonly log = new Logger(RunsService.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly agents: AgentsService,
    private readonly runs: RunsRepository,
  ) {}

  /**
   * Everything that can be refused is refused here, before any byte is streamed. The Observable
   * never errors: every failure becomes RUN_ERROR, after which it completes.
   */
  async start(input: RunAgentInputDto, principal: Principal): Promise<Observable<AguiEvent>> {
    const prepared = this.prepare(input, principal);
    await this.runs.create({
      id: input.runId,
      threadId: input.threadId,
      resourceId: principal.resourceId,
      agentId: prepared.agent.definition.id,
    });
    return new Observable<AguiEvent>((subscriber) => this.execute(prepared, subscriber));
  }

  private prepare(input: RunAgentInputDto, principal: Principal): PreparedRun {
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
    const ids = new Set<string>();
    for (const [i, m] of input.messages.entries()) {
      if (ids.has(m.id)) {
        throw new DomainError('VALIDATION_FAILED', 'Duplicate message id', [
          { path: `messages.${i}.id`, message: `message id '${m.id}' appears twice` },
        ]);
      }
      ids.add(m.id);
    }
    const agentId = input.forwardedProps?.agentId;
    if (agentId !== undefined && typeof agentId !== 'string') {
      throw new DomainError('VALIDATION_FAILED', 'Invalid agentId', [
        { path: 'forwardedProps.agentId', message: 'must be a string' },
      ]);
    }
    return {
      input,
      principal,
      agent: this.agents.get(agentId),
      messages: aguiToModelMessages(input.messages),
      context: contextToModelMessages(input.context),
    };
  }

  /** Subscribes one run: RUN_STARTED at once, then the engine; unsubscribing aborts the engine. */
  private execute(run: PreparedRun, subscriber: Subscriber<AguiEvent>): () => void {
    const { threadId, runId } = run.input;
    const abort = new AbortController();
    const lifecycle = new RunLifecycle({
      threadId,
      runId,
      emit: (event) => subscriber.next(event),
      warn: (message) => this.log.warn(`run ${runId}: ${message}`),
    });
    lifecycle.start();
    // The engine starts on the next turn, once RUN_STARTED has been written.
    setImmediate(() => {
      this.drive(run, lifecycle, abort.signal)
        .catch((err: unknown) => {
          this.log.error(err instanceof Error ? (err.stack ?? err.message) : 'run failed', `run ${runId}`);
          lifecycle.fail('INTERNAL', 'The run failed unexpectedly');
        })
        .finally(() => subscriber.complete());
    });
    return () => {
      if (!lifecycle.ended) abort.abort(new StopReason('CANCELLED', 'The client disconnected'));
    };
  }

  private async drive(run: PreparedRun, lifecycle: RunLifecycle, signal: AbortSignal): Promise<void> {
    let outcome: Outcome | undefined;
    let failure: unknown;
    const translator = new MastraToAgui();
    try {
      const output = await run.agent.agent.stream(run.messages, {
        abortSignal: signal,
        maxSteps: run.agent.definition.defaults?.maxSteps ?? this.config.limits.maxSteps,
        context: run.context as any,
      });
      const reader = (output.fullStream as ReadableStream<MastraChunk>).getReader();
      const stopReading = () => void reader.cancel().catch(() => undefined);
      signal.addEventListener('abort', stopReading, { once: true });
      try {
        while (!outcome) {
          const { done, value } = await reader.read();
          if (done) break;
          const translation = translator.translate(value);
          for (const event of translation.events) lifecycle.push(event);
          outcome = translation.outcome;
        }
      } finally {
        signal.removeEventListener('abort', stopReading);
        if (outcome) void reader.cancel().catch(() => undefined);
      }
    } catch (err) {
      failure = err;
    }
    await this.end(run, lifecycle, this.ending(outcome, failure, signal));
  }

  private ending(outcome: Outcome | undefined, failure: unknown, signal: AbortSignal): Ending {
    if (signal.aborted) {
      const reason =
        signal.reason instanceof StopReason
          ? signal.reason
          : new StopReason('CANCELLED', 'The run was cancelled');
      return {
        end: {
          status: reason.code === 'CANCELLED' ? 'cancelled' : 'error',
          code: reason.code,
          message: reason.message,
        },
        terminal: { code: reason.code, message: reason.message },
      };
    }
    if (failure !== undefined) {
      this.log.error(
        failure instanceof Error ? (failure.stack ?? failure.message) : 'run failed',
        'run failed',
      );
      return this.failed('INTERNAL', 'The run failed unexpectedly');
    }
    switch (outcome?.kind) {
      case 'finished':
        return { end: { status: 'finished' }, terminal: undefined };
      case 'error':
        return this.failed('MODEL_ERROR', outcome.message);
      case 'aborted':
        return {
          end: { status: 'cancelled', code: 'CANCELLED', message: 'The run was cancelled' },
          terminal: { code: 'CANCELLED', message: 'The run was cancelled' },
        };
      default:
        return this.failed('MODEL_ERROR', 'The model stream ended unexpectedly');
    }
  }

  private failed(code: RunErrorCode, message: string): Ending {
    return { end: { status: 'error', code, message }, terminal: { code, message } };
  }

  /** Records the final status first, so a client that sees the terminal event can rely on it. */
  private async end(run: PreparedRun, lifecycle: RunLifecycle, ending: Ending): Promise<void> {
    let terminal = ending.terminal;
    try {
      await this.runs.finish(run.input.runId, run.principal.resourceId, ending.end);
    } catch (err) {
      this.log.error(`run ${run.input.runId}: could not record its end: ${(err as Error).message}`);
      terminal ??= { code: 'INTERNAL', message: 'The run could not be recorded' };
    }
    if (terminal) lifecycle.fail(terminal.code, terminal.message);
    else lifecycle.finish();
  }
}
