import type { MastraModelConfig } from '@mastra/core/llm';
import { resolveModelConfig } from '@mastra/core/llm';
import type { RequestContext } from '@mastra/core/request-context';
import { RUN_CONTEXT_KEY, RunToolContext } from './tools/run-tools';

type ModelCall = { abortSignal?: AbortSignal };
type CallableModel = {
  doStream(options: ModelCall): PromiseLike<unknown>;
  doGenerate(options: ModelCall): PromiseLike<unknown>;
};

/** The model with `signal` added to the abort signal of every call it is given. */
export function withAbortSignal<M extends object>(model: M, signal: AbortSignal): M {
  const calls = model as unknown as CallableModel;
  const signalOf = (options: ModelCall) =>
    options.abortSignal ? AbortSignal.any([options.abortSignal, signal]) : signal;
  return new Proxy(model, {
    get(target, property) {
      if (property === 'doStream')
        return (o: ModelCall) => calls.doStream({ ...o, abortSignal: signalOf(o) });
      if (property === 'doGenerate') {
        return (o: ModelCall) => calls.doGenerate({ ...o, abortSignal: signalOf(o) });
      }
      const value = Reflect.get(target, property, target) as unknown;
      // Called on the model itself, so its private fields (#...) resolve.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The agent's model, bound per call to the run it serves: the run's abort signal reaches the
 * provider call itself (its HTTP request, the scripted model's timers). A run does not hand that
 * signal to `agent.stream()`: Mastra then races every chunk of the model stream against it (a
 * listener added and removed per chunk, in a stream layer of its own), which cost 15 to 17 % of the
 * engine's throughput (bench/README.md). Outside a run (the title request) the model is as configured.
 */
export function abortableModel(config: MastraModelConfig) {
  let resolved: ReturnType<typeof resolveModelConfig> | undefined;
  return async ({ requestContext }: { requestContext: RequestContext }) => {
    const model = await (resolved ??= resolveModelConfig(config));
    const run = requestContext.get<string, RunToolContext | undefined>(RUN_CONTEXT_KEY);
    return run ? withAbortSignal(model, run.signal) : model;
  };
}
