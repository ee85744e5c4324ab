import { CallableModel, ModelCallSettings, ProviderCall, StreamPart } from './model-calls';
import { ModelFailure } from './model-errors';
import type { TokenUsage } from '../protocol/usage';

const SETTINGS: ModelCallSettings = {
  agentId: 'assistant',
  modelId: 'openai/gpt-test',
  retries: 2,
  firstTokenTimeoutMs: 0,
  idleTimeoutMs: 0,
  backoffMs: 0,
};

const USAGE = { inputTokens: { total: 8 }, outputTokens: { total: 3 } };
const answer: StreamPart[] = [
  { type: 'stream-start' },
  { type: 'text-start' },
  { type: 'text-delta' },
  { type: 'text-end' },
  { type: 'finish', usage: USAGE },
];

/** A stream of these parts; `then` ends it: closed, errored, or never (a provider that hangs). */
function streamOf(parts: StreamPart[], then: 'close' | Error | 'hang' = 'close'): ReadableStream<StreamPart> {
  let i = 0;
  return new ReadableStream<StreamPart>({
    pull(controller) {
      if (i < parts.length) return controller.enqueue(parts[i++]);
      if (then === 'close') return controller.close();
      if (then === 'hang') return new Promise<void>(() => undefined);
      controller.error(then);
    },
  });
}

/** A stream of these parts, each `gapMs` after the one before (on the test's clock), then closed. */
function pacedStreamOf(parts: StreamPart[], gapMs: number): ReadableStream<StreamPart> {
  let i = 0;
  return new ReadableStream<StreamPart>({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, gapMs));
      if (i < parts.length) controller.enqueue(parts[i++]);
      else controller.close();
    },
  });
}

/** A model answering each call with the next of `answers`: a stream, or an error thrown by doStream. */
function modelOf(answers: Array<ReadableStream<StreamPart> | Error>): CallableModel & { calls: number } {
  const model = {
    calls: 0,
    modelId: 'gpt-test',
    provider: 'openai.chat',
    doStream() {
      const next = answers[model.calls++];
      return next instanceof Error ? Promise.reject(next) : Promise.resolve({ stream: next });
    },
    doGenerate: () => Promise.resolve({}),
  };
  return model;
}

const limited = () =>
  Object.assign(new Error('rate limited'), { statusCode: 429, responseHeaders: { 'retry-after': '0' } });

async function partsOf(stream: ReadableStream<StreamPart>): Promise<StreamPart[]> {
  const parts: StreamPart[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parts;
    parts.push(value);
  }
}

describe('ProviderCall', () => {
  it('retries transient failures before any content (thrown, or an error part), then streams and reports usage', async () => {
    const model = modelOf([
      limited(),
      streamOf([{ type: 'stream-start' }, { type: 'error', error: limited() }]),
      streamOf(answer),
    ]);
    const usage: TokenUsage[] = [];
    const { stream } = await new ProviderCall(
      model,
      SETTINGS,
      { recordUsage: (u) => usage.push(u) },
      {},
    ).stream();
    expect((await partsOf(stream)).map((p) => p.type)).toEqual(answer.map((p) => p.type));
    expect(model.calls).toBe(3);
    expect(usage).toEqual([
      { provider: 'openai', model: 'gpt-test', inputTokens: 8, outputTokens: 3, totalTokens: 11 },
    ]);
  });

  it('gives up after its retries (or the run’s own number), with the classified failure', async () => {
    const model = modelOf([limited(), limited(), limited()]);
    await expect(new ProviderCall(model, SETTINGS, undefined, {}).stream()).rejects.toMatchObject({
      code: 'MODEL_RATE_LIMITED',
    });
    expect(model.calls).toBe(3);
    const once = modelOf([limited(), streamOf(answer)]);
    await expect(new ProviderCall(once, SETTINGS, { modelRetries: 0 }, {}).stream()).rejects.toBeInstanceOf(
      ModelFailure,
    );
    expect(once.calls).toBe(1);
  });

  it('does not retry a failure that is not transient, nor one after content: that one becomes an error part', async () => {
    const refused = modelOf([Object.assign(new Error('bad'), { statusCode: 400 }), streamOf(answer)]);
    await expect(new ProviderCall(refused, SETTINGS, undefined, {}).stream()).rejects.toMatchObject({
      code: 'MODEL_ERROR',
    });
    expect(refused.calls).toBe(1);

    const reset = Object.assign(new Error('other side closed'), { code: 'ECONNRESET' });
    const cut = modelOf([streamOf(answer.slice(0, 3), reset), streamOf(answer)]);
    const { stream } = await new ProviderCall(cut, SETTINGS, undefined, {}).stream();
    const parts = await partsOf(stream);
    expect(parts.map((p) => p.type)).toEqual(['stream-start', 'text-start', 'text-delta', 'error']);
    expect(parts.at(-1)!.error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    expect(cut.calls).toBe(1);
  });

  it('times out a call that shows nothing, and a stream that goes silent, even when the model ignores its abort', async () => {
    const silent = modelOf([streamOf([{ type: 'stream-start' }], 'hang')]);
    const settings = { ...SETTINGS, retries: 0, firstTokenTimeoutMs: 20, idleTimeoutMs: 20 };
    await expect(new ProviderCall(silent, settings, undefined, {}).stream()).rejects.toMatchObject({
      code: 'MODEL_TIMEOUT',
    });

    const stalled = modelOf([streamOf(answer.slice(0, 3), 'hang')]);
    const { stream } = await new ProviderCall(stalled, settings, undefined, {}).stream();
    const parts = await partsOf(stream);
    expect(parts.at(-1)).toMatchObject({ type: 'error', error: { code: 'MODEL_TIMEOUT' } });
  });

  it('counts a silence from the read that waits: parts that each come within the idle timeout go on, however long the stream', async () => {
    jest.useFakeTimers();
    try {
      // 15 ms between parts, 20 ms allowed: a watchdog counting from the stream's first read fires at 20 ms.
      const paced = modelOf([pacedStreamOf(answer, 15)]);
      const settings = { ...SETTINGS, retries: 0, idleTimeoutMs: 20 };
      const parts = new ProviderCall(paced, settings, undefined, {}).stream().then((r) => partsOf(r.stream));
      await jest.advanceTimersByTimeAsync(15 * (answer.length + 1));
      expect((await parts).map((p) => p.type)).toEqual(answer.map((p) => p.type));
    } finally {
      jest.useRealTimers();
    }
  });

  it('stops retrying when the run is aborted', async () => {
    const run = new AbortController();
    run.abort();
    const model = modelOf([limited(), streamOf(answer)]);
    await expect(
      new ProviderCall(model, SETTINGS, undefined, { abortSignal: run.signal }).stream(),
    ).rejects.toBeInstanceOf(ModelFailure);
    expect(model.calls).toBe(1);
  });
});
