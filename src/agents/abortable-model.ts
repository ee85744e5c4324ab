import type { MastraModelConfig } from '@mastra/core/llm';
import { resolveModelConfig } from '@mastra/core/llm';
import type { RequestContext } from '@mastra/core/request-context';
import { Span, SpanKind } from '@opentelemetry/api';
import { endWithError, startSpan, tracingOn, withSpan, withTraceHeaders } from '../ops/tracing';
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

/** The model with `signal` added to the abort signal of every call it is given. */
export function withAbortSignal<M extends object>(model: M, signal: AbortSignal): M {
  const calls = model as unknown as CallableModel;
  const signalOf = (options: ModelCall) =>
    options.abortSignal ? AbortSignal.any([options.abortSignal, signal]) : signal;
  const stream = (o: ModelCall): PromiseLike<StreamResult> =>
    tracingOn()
      ? tracedStream(calls, { ...o, abortSignal: signalOf(o) })
      : calls.doStream({ ...o, abortSignal: signalOf(o) });
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
    return signal ? withAbortSignal(model, signal) : model;
  };
}
