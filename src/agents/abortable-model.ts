import type { MastraModelConfig } from '@mastra/core/llm';
import { resolveModelConfig } from '@mastra/core/llm';
import type { RequestContext } from '@mastra/core/request-context';
import { tracingOn } from '../ops/tracing';
import type { Pace } from '../runs/starts-first';
import {
  CallableModel,
  ModelCall,
  ModelCallObserver,
  ModelCallSettings,
  ProviderCall,
  StreamPart,
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
 * The model with `signal` added to the abort signal of every call it is given, its streaming calls
 * made as `bound` says (retries, timeouts, usage: ProviderCall), and its streams paced by `pace` when given.
 */
export function withAbortSignal<M extends object>(
  model: M,
  signal: AbortSignal,
  pace?: Pace,
  bound?: BoundCalls,
): M {
  const calls = model as unknown as CallableModel;
  const signalOf = (options: ModelCall) =>
    options.abortSignal ? AbortSignal.any([options.abortSignal, signal]) : signal;
  const stream = async (o: ModelCall): Promise<StreamResult> => {
    const options = { ...o, abortSignal: signalOf(o) };
    const settings =
      bound?.settings ??
      (tracingOn() ? { ...DIRECT, agentId: '', modelId: calls.modelId ?? 'unknown' } : undefined);
    const result = await (settings
      ? new ProviderCall(calls, settings, bound?.observer, options).stream()
      : calls.doStream(options));
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
export function abortableModel(config: MastraModelConfig, settings?: ModelCallSettings) {
  let resolved: ReturnType<typeof resolveModelConfig> | undefined;
  return async ({ requestContext }: { requestContext: RequestContext }) => {
    const model = await (resolved ??= resolveModelConfig(config));
    const run = requestContext.get<string, (RunToolContext & ModelCallObserver) | undefined>(RUN_CONTEXT_KEY);
    const signal = requestContext.get<string, AbortSignal | undefined>(MODEL_SIGNAL_KEY) ?? run?.signal;
    const pace = requestContext.get<string, Pace | undefined>(MODEL_PACE_KEY);
    return signal ? withAbortSignal(model, signal, pace, settings && { settings, observer: run }) : model;
  };
}
