import type { MastraModelConfig } from '@mastra/core/llm';
import { resolveModelConfig } from '@mastra/core/llm';
import type { RequestContext } from '@mastra/core/request-context';
import { tracingOn } from '../ops/tracing';
import {
  CallableModel,
  ModelCall,
  ModelCallObserver,
  ModelCallSettings,
  ProviderCall,
  StreamResult,
} from './model-calls';
import { RUN_CONTEXT_KEY, RunToolContext } from './tools/run-tools';

/** A provider call with no retries nor timeouts of its own (a model bound outside an agent's settings). */
const DIRECT: Omit<ModelCallSettings, 'modelId' | 'agentId'> = {
  retries: 0,
  firstTokenTimeoutMs: 0,
  idleTimeoutMs: 0,
  backoffMs: 0,
};

/** What a model bound to a run makes of each provider call (model-calls.ts). */
export type BoundCalls = { settings: ModelCallSettings; observer?: ModelCallObserver };

/**
 * The model with `signal` added to the abort signal of every call it is given, and its streaming
 * calls made as `bound` says (retries, timeouts, usage: ProviderCall).
 */
export function withAbortSignal<M extends object>(model: M, signal: AbortSignal, bound?: BoundCalls): M {
  const calls = model as unknown as CallableModel;
  const signalOf = (options: ModelCall) =>
    options.abortSignal ? AbortSignal.any([options.abortSignal, signal]) : signal;
  const stream = (o: ModelCall): PromiseLike<StreamResult> => {
    const options = { ...o, abortSignal: signalOf(o) };
    const settings =
      bound?.settings ??
      (tracingOn() ? { ...DIRECT, agentId: '', modelId: calls.modelId ?? 'unknown' } : undefined);
    return settings
      ? new ProviderCall(calls, settings, bound?.observer, options).stream()
      : calls.doStream(options);
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

/** A model as an agent is given one: fixed, or chosen per call from the request context. */
export type ModelConfig =
  | MastraModelConfig
  | ((args: {
      requestContext: RequestContext;
      mastra?: unknown;
    }) => MastraModelConfig | Promise<MastraModelConfig>);

/** The request-context key of the signal that aborts a call's provider requests (set by MastraRunner). */
export const MODEL_SIGNAL_KEY = 'io-bridge.model-signal';

/**
 * The agent's model, bound per call to the run it serves: the call's abort signal (or else the run's)
 * reaches the provider call itself (its HTTP request, the scripted model's timers). A run does not hand that
 * signal to `agent.stream()`: Mastra then races every chunk of the model stream against it (a
 * listener added and removed per chunk, in a stream layer of its own), which cost 15 to 17 % of the
 * engine's throughput (bench/HISTORY.md). Outside a run (the title request) the model is as configured.
 */
export function abortableModel(config: ModelConfig, settings?: ModelCallSettings) {
  let resolved: ReturnType<typeof resolveModelConfig> | undefined;
  return async ({ requestContext, mastra }: { requestContext: RequestContext; mastra?: unknown }) => {
    // A model that is a function of the request context (an agent of MASTRA_ENTRY) is chosen anew
    // for every call; any other is resolved once.
    const model = await (typeof config === 'function'
      ? resolveModelConfig(config, requestContext, mastra as never)
      : (resolved ??= resolveModelConfig(config)));
    const run = requestContext.get<string, (RunToolContext & ModelCallObserver) | undefined>(RUN_CONTEXT_KEY);
    const signal = requestContext.get<string, AbortSignal | undefined>(MODEL_SIGNAL_KEY) ?? run?.signal;
    return signal ? withAbortSignal(model, signal, settings && { settings, observer: run }) : model;
  };
}
