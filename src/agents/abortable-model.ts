import type { MastraModelConfig } from '@mastra/core/llm';
import { resolveModelConfig } from '@mastra/core/llm';
import type { RequestContext } from '@mastra/core/request-context';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, startSpan, tracingOn, withSpan, withTraceHeaders } from '../ops/tracing';
import type { Pace } from '../runs/starts-first';
import { RUN_CONTEXT_KEY, RunToolContext } from './tools/run-tools';

type ModelCall = { abortSignal?: AbortSignal; headers?: Record<string, string | undefined> };
type StreamPart = {
  type: string;
  usage?: { inputTokens?: unknown; outputTokens?: unknown };
  error?: unknown;
};
type StreamResult = { stream: ReadableStream<StreamPart> };
type CallableModel = {
  doStream(options: ModelCall): PromiseLike<StreamResult>;
  doGenerate(options: ModelCall): PromiseLike<unknown>;
  provider?: string;
  modelId?: string;
};

/** A CLIENT span for one provider call, with `traceparent` in the call's headers for HTTP providers. */
function modelSpan(model: CallableModel, options: ModelCall): { span: Span; options: ModelCall } | undefined {
  const span = startSpan(`chat ${model.modelId}`, SpanKind.CLIENT, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': model.provider,
    'gen_ai.request.model': model.modelId,
  });
  return span && { span, options: { ...options, headers: withTraceHeaders(options.headers, span) } };
}

function tokens(span: Span, part: StreamPart): void {
  const { inputTokens, outputTokens } = part.usage ?? {};
  if (typeof inputTokens === 'number') span.setAttribute('gen_ai.usage.input_tokens', inputTokens);
  if (typeof outputTokens === 'number') span.setAttribute('gen_ai.usage.output_tokens', outputTokens);
}

/** doStream under a span lasting until its stream ends (or fails, or is cancelled). */
async function tracedStream(model: CallableModel, options: ModelCall): Promise<StreamResult> {
  const traced = modelSpan(model, options);
  if (!traced) return model.doStream(options);
  const { span } = traced;
  let result: StreamResult;
  try {
    result = await withSpan(span, () => model.doStream(traced.options));
  } catch (err) {
    endWithError(span, 'MODEL_ERROR', err instanceof Error ? err.name : undefined);
    throw err;
  }
  let failed = false;
  const stream = result.stream.pipeThrough(
    new TransformStream<StreamPart, StreamPart>({
      transform(part, controller) {
        if (part.type === 'finish') tokens(span, part);
        else if (part.type === 'error') failed = true;
        controller.enqueue(part);
      },
      flush: () => (failed ? endWithError(span, 'MODEL_ERROR') : span.end()),
      // Node's streams call it when the run stops reading; the DOM typings lack it.
      cancel: () => span.end(),
    } as Transformer<StreamPart, StreamPart>),
  );
  return { ...result, stream };
}

/** The parts that are the run's first content: from the first of them on, its parts are paced. */
const CONTENT_PARTS = new Set([
  'text-delta',
  'reasoning-delta',
  'tool-input-start',
  'tool-call',
  'finish',
  'error',
]);

/**
 * The source of a paced stream: the call's stream, its parts after the run's first content each
 * taken in the run's turn (StartsFirst). A class, not closures: one is held per open run.
 */
class PacedSource implements UnderlyingDefaultSource<StreamPart> {
  private shown = false;

  constructor(
    private readonly reader: ReadableStreamDefaultReader<StreamPart>,
    private readonly pace: Pace,
  ) {}

  pull(controller: ReadableStreamDefaultController<StreamPart>): Promise<void> | void {
    const turn = this.shown ? this.pace.turn() : undefined;
    if (turn) return turn.then(() => this.take(controller));
    return this.take(controller);
  }

  cancel(reason: unknown): Promise<void> {
    this.pace.started();
    return this.reader.cancel(reason);
  }

  private take(controller: ReadableStreamDefaultController<StreamPart>): Promise<void> {
    return this.reader.read().then(
      ({ done, value }) => {
        if (done) {
          this.pace.started();
          return controller.close();
        }
        if (!this.shown && CONTENT_PARTS.has(value.type)) {
          this.shown = true;
          this.pace.started();
        }
        controller.enqueue(value);
      },
      (err: unknown) => {
        this.pace.started();
        throw err;
      },
    );
  }
}

function paced(result: StreamResult, pace: Pace): StreamResult {
  // Read only when Mastra reads: a part read ahead would not wait for its turn.
  result.stream = new ReadableStream(new PacedSource(result.stream.getReader(), pace), { highWaterMark: 0 });
  return result;
}

/**
 * The model with `signal` added to the abort signal of every call it is given, and its streams
 * paced by `pace` when given.
 */
export function withAbortSignal<M extends object>(model: M, signal: AbortSignal, pace?: Pace): M {
  const calls = model as unknown as CallableModel;
  const signalOf = (options: ModelCall) =>
    options.abortSignal ? AbortSignal.any([options.abortSignal, signal]) : signal;
  const stream = async (o: ModelCall): Promise<StreamResult> => {
    const result = await (tracingOn()
      ? tracedStream(calls, { ...o, abortSignal: signalOf(o) })
      : calls.doStream({ ...o, abortSignal: signalOf(o) }));
    // A run that starts alone is not paced (no stream layer on its every part): under a burst, runs start together.
    return pace?.crowded() ? paced(result, pace) : result;
  };
  return new Proxy(model, {
    get(target, property) {
      if (property === 'doStream') return stream;
      if (property === 'doGenerate') {
        return (o: ModelCall) => calls.doGenerate({ ...o, abortSignal: signalOf(o) });
      }
      const value = Reflect.get(target, property, target) as unknown;
      // Called on the model itself, so its private fields (#...) resolve.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The request-context key of the signal that aborts a call's provider requests (set by MastraRunner). */
export const MODEL_SIGNAL_KEY = 'io-bridge.model-signal';

/** The request-context key of the run's pace (StartsFirst), set by MastraRunner when the run has one. */
export const MODEL_PACE_KEY = 'io-bridge.model-pace';

/**
 * The agent's model, bound per call to the run it serves: the call's abort signal (or else the run's)
 * reaches the provider call itself (its HTTP request, the scripted model's timers). A run does not hand that
 * signal to `agent.stream()`: Mastra then races every chunk of the model stream against it (a
 * listener added and removed per chunk, in a stream layer of its own), which cost 15 to 17 % of the
 * engine's throughput (bench/README.md). Outside a run (the title request) the model is as configured.
 */
export function abortableModel(config: MastraModelConfig) {
  let resolved: ReturnType<typeof resolveModelConfig> | undefined;
  return async ({ requestContext }: { requestContext: RequestContext }) => {
    const model = await (resolved ??= resolveModelConfig(config));
    const signal =
      requestContext.get<string, AbortSignal | undefined>(MODEL_SIGNAL_KEY) ??
      requestContext.get<string, RunToolContext | undefined>(RUN_CONTEXT_KEY)?.signal;
    const pace = requestContext.get<string, Pace | undefined>(MODEL_PACE_KEY);
    return signal ? withAbortSignal(model, signal, pace) : model;
  };
}
