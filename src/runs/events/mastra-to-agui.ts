import { randomUUID } from 'node:crypto';
import { Observable, Observer, OperatorFunction, Subscriber } from 'rxjs';
import { safeErrorMessage } from '../../common/errors';
import { modelFailureOf, ModelFailureCode } from '../../agents/model-errors';
import { UpstreamEvent } from '../../protocol/agui-events';

/** A Mastra `fullStream` chunk, as far as the translation reads it. */
export type MastraChunk = { type: string; payload?: any; object?: unknown };

/** How a chunk ends the run, when it does. */
export type Outcome =
  | { kind: 'finished'; result?: unknown }
  | {
      kind: 'error';
      message: string;
      structuredOutput?: boolean;
      /** A provider's failure, classified (agents/model-errors.ts): its code, and its detail for the log. */
      model?: { code: ModelFailureCode; detail: string };
    }
  | { kind: 'aborted' };

export type Translation = { events: UpstreamEvent[]; outcome?: Outcome };

const NONE: Translation = { events: [] };

/**
 * Translates Mastra `fullStream` chunks into AG-UI events for one run. Stateful: each model step gets
 * its own assistant message id, which its text and its tool calls share (`parentMessageId`), so a
 * client rebuilds `assistant(toolCalls) → tool → assistant(text)` in order.
 */
export class MastraToAgui {
  private stepMessageId: string = randomUUID();
  private step = 0;
  /** Tool calls whose arguments streamed (made on first use: an open run holds its translator). */
  private streamedCalls: Set<string> | undefined;
  /** The validated structured output, when the run asked for one. */
  private object: unknown;

  constructor(
    private readonly newId: () => string = randomUUID,
    /** Steps the run showed before (a continued run's): step names go on after them. */
    stepsBefore = 0,
  ) {
    this.step = stepsBefore;
  }

  translate(chunk: MastraChunk): Translation {
    const p = chunk.payload ?? {};
    switch (chunk.type) {
      case 'text-delta':
        return { events: [{ type: 'TEXT_MESSAGE_CONTENT', messageId: this.stepMessageId, delta: p.text }] };
      case 'text-start':
        return { events: [{ type: 'TEXT_MESSAGE_START', messageId: this.stepMessageId }] };
      case 'text-end':
        return { events: [{ type: 'TEXT_MESSAGE_END', messageId: this.stepMessageId }] };
      case 'step-start':
        this.stepMessageId = this.newId();
        return { events: [{ type: 'STEP_STARTED', stepName: `step-${++this.step}` }] };
      case 'step-finish':
        return { events: [{ type: 'STEP_FINISHED', stepName: `step-${this.step}` }] };
      case 'reasoning-start':
        return {
          events: [
            { type: 'REASONING_MESSAGE_START', messageId: `${this.stepMessageId}-reasoning-${p.id ?? ''}` },
          ],
        };
      case 'reasoning-delta':
        return {
          events: [
            {
              type: 'REASONING_MESSAGE_CONTENT',
              messageId: `${this.stepMessageId}-reasoning-${p.id ?? ''}`,
              delta: p.text,
            },
          ],
        };
      case 'reasoning-end':
        return {
          events: [
            { type: 'REASONING_MESSAGE_END', messageId: `${this.stepMessageId}-reasoning-${p.id ?? ''}` },
          ],
        };
      case 'tool-call-input-streaming-start':
        (this.streamedCalls ??= new Set()).add(p.toolCallId);
        return {
          events: [
            {
              type: 'TOOL_CALL_START',
              toolCallId: p.toolCallId,
              toolCallName: p.toolName,
              parentMessageId: this.stepMessageId,
            },
          ],
        };
      case 'tool-call-delta':
        return { events: [{ type: 'TOOL_CALL_ARGS', toolCallId: p.toolCallId, delta: p.argsTextDelta }] };
      case 'tool-call': {
        // The call is complete here; END waits for it so the guard can fall back on the parsed args.
        const end: UpstreamEvent = { type: 'TOOL_CALL_END', toolCallId: p.toolCallId, args: p.args };
        if (this.streamedCalls?.has(p.toolCallId)) return { events: [end] };
        return {
          events: [
            {
              type: 'TOOL_CALL_START',
              toolCallId: p.toolCallId,
              toolCallName: p.toolName,
              parentMessageId: this.stepMessageId,
            },
            end,
          ],
        };
      }
      case 'tool-result':
        return {
          events: [
            {
              type: 'TOOL_CALL_RESULT',
              toolCallId: p.toolCallId,
              messageId: p.messageId,
              content: p.result ?? null,
            },
          ],
        };
      case 'tool-error':
        return {
          events: [
            {
              type: 'TOOL_CALL_RESULT',
              toolCallId: p.toolCallId,
              content: { error: safeErrorMessage(p.error, 'Tool failed') },
            },
          ],
        };
      case 'error': {
        const failure = modelFailureOf(p.error);
        return {
          events: [],
          outcome: {
            kind: 'error',
            message: failure?.message ?? safeErrorMessage(p.error, 'The model failed'),
            ...(failure ? { model: { code: failure.code, detail: failure.detail } } : {}),
            // Mastra validates structured output itself and reports a mismatch as an error chunk.
            ...(String(p.error?.id ?? '').startsWith('STRUCTURED_OUTPUT') ? { structuredOutput: true } : {}),
          },
        };
      }
      case 'abort':
        return { events: [], outcome: { kind: 'aborted' } };
      case 'object-result':
        this.object = chunk.object ?? p.object;
        return NONE;
      case 'finish':
        return {
          events: [],
          outcome: { kind: 'finished', ...(this.object !== undefined ? { result: this.object } : {}) },
        };
      default:
        return NONE;
    }
  }
}

/**
 * The translation as an operator: one Translation per chunk that gives events or an outcome, each
 * subscription with a translator of its own. It completes after the first outcome: the run ends
 * there, and unsubscribing stops the engine from sending more.
 */
export function translate(newId?: () => string, stepsBefore = 0): OperatorFunction<MastraChunk, Translation> {
  return (chunks) =>
    new Observable<Translation>((subscriber) =>
      chunks.subscribe(new Translating(new MastraToAgui(newId, stepsBefore), subscriber)),
    );
}

/**
 * One subscription of translate(). One object per run, not a chain of map, filter and takeWhile nor
 * closures (which would keep the upstream chain): it is held as long as the run streams.
 */
class Translating implements Observer<MastraChunk> {
  constructor(
    private readonly translator: MastraToAgui,
    private readonly subscriber: Subscriber<Translation>,
  ) {}

  next(chunk: MastraChunk): void {
    const translation = this.translator.translate(chunk);
    if (translation.outcome !== undefined) {
      this.subscriber.next(translation);
      this.subscriber.complete();
    } else if (translation.events.length > 0) this.subscriber.next(translation);
  }

  error(err: unknown): void {
    this.subscriber.error(err);
  }

  complete(): void {
    this.subscriber.complete();
  }
}
