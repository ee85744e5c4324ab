import { Span, SpanKind } from '@opentelemetry/api';
import type { Metrics } from '../ops/metrics.service';
import { endWithError, startSpan, tracingOn, withSpan, withTraceHeaders } from '../ops/tracing';
import type { TokenUsage } from '../protocol/usage';
import { classifyModelError, ModelFailure } from './model-errors';
import { tokenUsageOf } from './model-usage';
import { CONTENT_PARTS, StreamPart, WatchedCall, WatchedSource } from './watched-source';

export type { StreamPart };

export type ModelCall = { abortSignal?: AbortSignal; headers?: Record<string, string | undefined> };
export type StreamResult = { stream: ReadableStream<StreamPart> };
export type CallableModel = {
  doStream(options: ModelCall): PromiseLike<StreamResult>;
  doGenerate(options: ModelCall): PromiseLike<unknown>;
  provider?: string;
  modelId?: string;
};

/** How an agent's provider calls behave (MODEL_RETRIES, MODEL_FIRST_TOKEN_TIMEOUT_MS, MODEL_IDLE_TIMEOUT_MS). */
export type ModelCallSettings = {
  agentId: string;
  /** The configured model id (`openai/gpt-4o-mini`): the metric label, and the usage's provider and model. */
  modelId: string;
  retries: number;
  /** From the call to its first content; 0: no limit. */
  firstTokenTimeoutMs: number;
  /** Between two parts once content flows; 0: no limit. */
  idleTimeoutMs: number;
  /** The first retry's wait without a Retry-After, doubled each time. */
  backoffMs: number;
  metrics?: Metrics;
};

/** What the run a call serves wants to know of it (RunExecution, through the request context). */
export interface ModelCallObserver {
  /** Each provider call's usage, when it reported any. */
  recordUsage?(usage: TokenUsage): void;
  /** Retries the run asked for (`modelSettings.maxRetries`), instead of the configured ones. */
  readonly modelRetries?: number;
}

/** A provider asking for a longer wait than this is not retried: the run would hold its reader that long. */
const MAX_RETRY_WAIT_MS = 30_000;

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** The provider and model a configured id names (`local/test-model` → local, test-model). */
function labelsOf(modelId: string): { provider?: string; model: string } {
  const slash = modelId.indexOf('/');
  return slash < 0
    ? { model: modelId }
    : { provider: modelId.slice(0, slash), model: modelId.slice(slash + 1) };
}

/**
 * One streaming provider call as a run makes it: retried while nothing was shown when it fails in a
 * transient way (429, 5xx, a connection failure, honouring Retry-After, at most `retries` times);
 * bounded by a first-token and an idle timeout; its failure classified (ModelFailure: a code and a
 * message safe for a user); its usage reported to the run, the metrics and its span.
 */
export class ProviderCall implements WatchedCall {
  private readonly started = performance.now();
  private readonly labels: { agent: string; model: string };
  private span: Span | undefined;
  private timer: NodeJS.Timeout | undefined;
  private firstTokenAt = 0;
  private ended = false;

  constructor(
    private readonly model: CallableModel,
    private readonly settings: ModelCallSettings,
    private readonly observer: ModelCallObserver | undefined,
    private readonly options: ModelCall,
  ) {
    this.labels = { agent: settings.agentId, model: settings.modelId };
  }

  async stream(): Promise<StreamResult> {
    if (tracingOn()) {
      this.span = startSpan(`chat ${this.model.modelId}`, SpanKind.CLIENT, {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': this.model.provider,
        'gen_ai.request.model': this.model.modelId,
      });
    }
    const retries = this.observer?.modelRetries ?? this.settings.retries;
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.attempt();
      if (!(outcome instanceof ModelFailure)) return outcome;
      const wait = outcome.retryAfterMs ?? this.settings.backoffMs * 2 ** attempt;
      if (this.runAborted) {
        this.finish('cancelled');
        throw outcome;
      }
      if (!outcome.transient || attempt >= retries || wait > MAX_RETRY_WAIT_MS) {
        this.fail(outcome);
        throw outcome;
      }
      this.settings.metrics?.modelRetries.inc({ ...this.labels, code: outcome.code });
      this.span?.addEvent('retry', {
        'io_bridge.model.error_code': outcome.code,
        'io_bridge.model.wait_ms': wait,
      });
      await sleep(wait, this.options.abortSignal);
    }
  }

  /**
   * One request: its result once its first content arrived (what came before is held, and dropped
   * if it fails), or its failure while nothing was shown.
   */
  private async attempt(): Promise<StreamResult | ModelFailure> {
    const local = new AbortController();
    const signal = this.options.abortSignal
      ? AbortSignal.any([this.options.abortSignal, local.signal])
      : local.signal;
    const headers = this.span ? withTraceHeaders(this.options.headers, this.span) : this.options.headers;
    const timedOut = this.arm(this.settings.firstTokenTimeoutMs, local, 'first token');
    let result: StreamResult;
    try {
      result = await withSpan(this.span, () =>
        this.model.doStream({ ...this.options, headers, abortSignal: signal }),
      );
    } catch (err) {
      this.disarm();
      return timedOut() ?? classifyModelError(err);
    }
    const reader = result.stream.getReader();
    const held: StreamPart[] = [];
    for (;;) {
      let next: ReadableStreamReadResult<StreamPart>;
      try {
        next = await this.read(reader, local);
      } catch (err) {
        this.disarm();
        void reader.cancel().catch(() => undefined);
        return timedOut() ?? classifyModelError(err);
      }
      // Ended without content: what it held goes on, then its end (the engine reports what is missing).
      if (next.done) break;
      const part = next.value;
      if (part.type === 'error') {
        this.disarm();
        void reader.cancel().catch(() => undefined);
        return classifyModelError(part.error);
      }
      held.push(part);
      if (CONTENT_PARTS.has(part.type)) break;
    }
    this.disarm();
    return {
      ...result,
      stream: new ReadableStream(new WatchedSource(this, reader, held, local), { highWaterMark: 0 }),
    };
  }

  /**
   * A timer aborting the request when it fires; returns the check of whether it did (then the
   * request's failure is this timeout, whatever the aborted request threw).
   */
  private arm(ms: number, local: AbortController, what: string): () => ModelFailure | undefined {
    this.disarm();
    let fired: ModelFailure | undefined;
    if (ms > 0) {
      this.timer = setTimeout(() => {
        fired = ModelFailure.of('MODEL_TIMEOUT', `no ${what} within ${ms} ms`);
        local.abort(fired);
      }, ms);
    }
    return () => fired;
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Reads a part, or rejects as soon as the timer fires (a model that ignores its abort signal still stops). */
  private read(
    reader: ReadableStreamDefaultReader<StreamPart>,
    local: AbortController,
  ): Promise<ReadableStreamReadResult<StreamPart>> {
    if (!this.timer) return reader.read();
    const signal = local.signal;
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(asError(signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      reader.read().then(
        (r) => {
          signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(asError(e));
        },
      );
    });
  }

  /** A part passed on to the run: the first one's time, usage at `finish`. */
  seen(part: StreamPart): void {
    if (!this.firstTokenAt && CONTENT_PARTS.has(part.type)) {
      this.firstTokenAt = performance.now();
      this.settings.metrics?.modelFirstToken.observe(this.labels, (this.firstTokenAt - this.started) / 1000);
    }
    if (part.type !== 'finish') return;
    const usage = tokenUsageOf(part.usage, labelsOf(this.settings.modelId));
    if (!usage) return;
    this.observer?.recordUsage?.(usage);
    const tokens = this.settings.metrics?.modelTokens;
    if (usage.inputTokens) tokens?.inc({ ...this.labels, kind: 'input' }, usage.inputTokens);
    if (usage.outputTokens) tokens?.inc({ ...this.labels, kind: 'output' }, usage.outputTokens);
    if (this.span) {
      if (usage.inputTokens !== undefined)
        this.span.setAttribute('gen_ai.usage.input_tokens', usage.inputTokens);
      if (usage.outputTokens !== undefined)
        this.span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
    }
  }

  /** The call ended without a failure of its own: its stream done, or the run stopped reading. */
  finish(outcome: 'ok' | 'cancelled'): void {
    if (this.ended) return;
    this.ended = true;
    this.disarm();
    this.settings.metrics?.modelCallDuration.observe(
      { ...this.labels, outcome },
      (performance.now() - this.started) / 1000,
    );
    this.span?.end();
  }

  /** The call failed: the error metric, and the span failed with the provider's own words. */
  fail(failure: ModelFailure): void {
    if (this.ended) return;
    this.ended = true;
    this.disarm();
    const metrics = this.settings.metrics;
    metrics?.modelErrors.inc({ ...this.labels, code: failure.code });
    metrics?.modelCallDuration.observe(
      { ...this.labels, outcome: 'error' },
      (performance.now() - this.started) / 1000,
    );
    if (this.span) {
      this.span.setAttribute('error.type', failure.code);
      endWithError(this.span, failure.code, failure.detail);
    }
  }

  get idleTimeoutMs(): number {
    return this.settings.idleTimeoutMs;
  }

  get runAborted(): boolean {
    return this.options.abortSignal?.aborted === true;
  }
}
