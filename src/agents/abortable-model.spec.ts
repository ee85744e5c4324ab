import { RequestContext } from '@mastra/core/request-context';
import { abortableModel, withAbortSignal } from './abortable-model';
import { ScriptedModel } from './scripted-model';
import { RUN_CONTEXT_KEY } from './tools/run-tools';

/** A model with a private field, as provider classes have (Mastra's router model does). */
class RecordingModel {
  readonly specificationVersion = 'v3';
  readonly calls: Array<{ abortSignal?: AbortSignal }> = [];
  #secret = 'private';

  doStream(options: { abortSignal?: AbortSignal }) {
    this.calls.push(options);
    return Promise.resolve({ stream: this.#secret });
  }

  doGenerate(options: { abortSignal?: AbortSignal }) {
    this.calls.push(options);
    return Promise.resolve({ text: this.#secret });
  }

  describe(): string {
    return this.#secret;
  }
}

describe('withAbortSignal', () => {
  it("hands the run's signal to a call that has none, keeping the call's other options", async () => {
    const model = new RecordingModel();
    const run = new AbortController();
    const bound = withAbortSignal(model, run.signal);
    await expect(bound.doStream({ temperature: 1 } as never)).resolves.toEqual({ stream: 'private' });
    expect(model.calls[0]).toMatchObject({ temperature: 1 });
    expect(model.calls[0].abortSignal).toBe(run.signal);
  });

  it("combines the run's signal with the call's own: either one aborts the call", async () => {
    for (const which of ['run', 'call'] as const) {
      const model = new RecordingModel();
      const run = new AbortController();
      const call = new AbortController();
      await withAbortSignal(model, run.signal).doGenerate({ abortSignal: call.signal });
      const signal = model.calls[0].abortSignal!;
      expect(signal.aborted).toBe(false);
      (which === 'run' ? run : call).abort(new Error(which));
      expect(signal.aborted).toBe(true);
      expect((signal.reason as Error).message).toBe(which);
    }
  });

  it('leaves the rest of the model as it is: properties, and methods that read private fields', () => {
    const bound = withAbortSignal(new RecordingModel(), new AbortController().signal);
    expect(bound.specificationVersion).toBe('v3');
    expect(bound.describe()).toBe('private');
    expect(bound).toBeInstanceOf(RecordingModel);
  });
});

describe('abortableModel', () => {
  it('binds the model to the run in the request context, and leaves it unbound outside a run', async () => {
    const resolve = abortableModel(new ScriptedModel());
    const run = new AbortController();
    const inRun = new RequestContext();
    inRun.set(RUN_CONTEXT_KEY, { signal: run.signal });
    const bound = (await resolve({ requestContext: inRun })) as ScriptedModel;
    const plain = (await resolve({ requestContext: new RequestContext() })) as ScriptedModel;
    // Resolved once (Mastra's wrapper around the configured model), then bound per run.
    expect(await resolve({ requestContext: new RequestContext() })).toBe(plain);
    expect(bound).not.toBe(plain);
    expect(bound.modelId).toBe('scripted');

    // The scripted model's slow stream stops when the run's signal aborts.
    const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: '/slow 60000 a b' }] }];
    const { stream } = await bound.doStream({ prompt });
    const reader = stream.getReader();
    const parts: string[] = [];
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'closed';
        parts.push(value.type);
      }
    })().catch((err: Error) => err.message);
    run.abort(new Error('stopped'));
    await expect(reading).resolves.toBe('stopped');
  });
});
