import { Agent } from '@mastra/core/agent';
import { RequestContext } from '@mastra/core/request-context';
import { abortableModel, MODEL_PACE_KEY, MODEL_SIGNAL_KEY, withAbortSignal } from '../agents/abortable-model';
import { ScriptedModel } from '../agents/scripted-model';
import { MastraRunner } from './mastra-runner';
import { StartsFirst } from './starts-first';
import { settledNow } from '../../test/support/promises';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A real Mastra agent on the scripted model, behind the run-bound model wrapper the service uses. */
const scriptedAgent = () =>
  new Agent({
    id: 'scripted',
    name: 'scripted',
    instructions: 'test',
    model: abortableModel(new ScriptedModel()),
  });

describe('StartsFirst', () => {
  it('lets a run go on at once when no run is starting', () => {
    const starts = new StartsFirst();
    const run = starts.begin();
    run.started();
    expect(run.turn()).toBeUndefined();
  });

  it('while a run is starting, a run past its first content goes on in the next event-loop turn', async () => {
    const starts = new StartsFirst();
    const streaming = starts.begin();
    streaming.started();
    const starting = starts.begin();
    expect(starts.startingNow).toBe(1);
    const next = streaming.turn()!;
    expect(await settledNow(next)).toBe(false);
    await turn();
    expect(await settledNow(next)).toBe(true);
    // One part per turn: asking again waits for the turn after.
    const after = streaming.turn()!;
    expect(await settledNow(after)).toBe(false);
    starting.started();
    await turn();
    expect(await settledNow(after)).toBe(true);
    expect(streaming.turn()).toBeUndefined();
  });

  it('counts a start once, however often it is ended', () => {
    const starts = new StartsFirst();
    const a = starts.begin();
    const b = starts.begin();
    a.started();
    a.started();
    expect(starts.startingNow).toBe(1);
    b.started();
    expect(starts.startingNow).toBe(0);
  });
});

describe('a paced model stream (withAbortSignal with a pace)', () => {
  const prompt = (text: string) => [{ role: 'user' as const, content: [{ type: 'text' as const, text }] }];

  /** Reads the scripted model's stream for `text`, counting event-loop turns until it ends. */
  async function read(stream: ReadableStream<{ type: string }>) {
    let turns = 0;
    let reading = true;
    const count = () =>
      setImmediate(() => {
        if (!reading) return;
        turns++;
        count();
      });
    count();
    const types: string[] = [];
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      types.push(value.type);
    }
    reading = false;
    return { types, turns };
  }

  it('takes one part per turn after its first content while another run is starting, and ends its start at the first content', async () => {
    const starts = new StartsFirst();
    const pace = starts.begin();
    const other = starts.begin();
    const model = withAbortSignal(new ScriptedModel(), new AbortController().signal, pace);
    const { stream } = await model.doStream({ prompt: prompt('/bench 20') });
    const { types, turns } = await read(stream);
    expect(types.filter((t) => t === 'text-delta')).toHaveLength(20);
    expect(starts.startingNow).toBe(1);
    // 19 more deltas, the text's end and the finish each waited for a turn.
    expect(turns).toBeGreaterThanOrEqual(19);
    other.started();
  });

  it('is not paced at all when its run starts alone: the model stream is handed over as it is', async () => {
    const starts = new StartsFirst();
    const pace = starts.begin();
    const original = new ScriptedModel();
    const { stream } = await withAbortSignal(original, new AbortController().signal, pace).doStream({
      prompt: prompt('/bench 20'),
    });
    const { types, turns } = await read(stream);
    expect(types.filter((t) => t === 'text-delta')).toHaveLength(20);
    expect(turns).toBeLessThan(3);
    // Nothing saw its content: the run's start ends with the run (MastraRunner or the run's end).
    expect(starts.startingNow).toBe(1);
    pace.started();
  });

  it('ends the start of a paced run whose stream is cancelled before any content', async () => {
    const starts = new StartsFirst();
    const other = starts.begin();
    const model = withAbortSignal(new ScriptedModel(), new AbortController().signal, starts.begin());
    const { stream } = await model.doStream({ prompt: prompt('/slow 60000 a b') });
    await stream.cancel();
    expect(starts.startingNow).toBe(1);
    other.started();
    expect(starts.startingNow).toBe(0);
  });

  it('is what abortableModel gives a run whose request context has a pace', async () => {
    const starts = new StartsFirst();
    const pace = starts.begin();
    const other = starts.begin();
    const context = new RequestContext();
    context.set(MODEL_SIGNAL_KEY, new AbortController().signal);
    context.set(MODEL_PACE_KEY, pace);
    const model = (await abortableModel(new ScriptedModel())({ requestContext: context })) as ScriptedModel;
    const { stream } = await model.doStream({ prompt: prompt('/bench 20') });
    const { turns } = await read(stream);
    expect(turns).toBeGreaterThanOrEqual(19);
    other.started();
  });

  it('through a real agent: a run past its first words yields to a starting run, and still finishes whole', async () => {
    const starts = new StartsFirst();
    const other = starts.begin();
    const agent = scriptedAgent();
    const context = new RequestContext();
    context.set(MODEL_SIGNAL_KEY, new AbortController().signal);
    context.set(MODEL_PACE_KEY, starts.begin());
    const output = await agent.stream('/bench 20', { requestContext: context });
    const { types, turns } = await read(output.fullStream as unknown as ReadableStream<{ type: string }>);
    expect(types.filter((t) => t === 'text-delta')).toHaveLength(20);
    expect(types.at(-1)).toBe('finish');
    expect(turns).toBeGreaterThanOrEqual(19);
    other.started();
    expect(starts.startingNow).toBe(0);
  });

  it('through MastraRunner: a run that starts alone ends its start at its first content, unpaced', async () => {
    const starts = new StartsFirst();
    const pace = starts.begin();
    const agent = scriptedAgent();
    const startingAtFirstText: number[] = [];
    await new Promise<void>((resolve, reject) =>
      new MastraRunner()
        .stream(agent, '/bench 20', { pace, signal: new AbortController().signal })
        .subscribe({
          next: (c) => {
            if (c.type === 'text-delta' && !startingAtFirstText.length)
              startingAtFirstText.push(starts.startingNow);
          },
          complete: resolve,
          error: reject,
        }),
    );
    expect(startingAtFirstText).toEqual([0]);
  });
});
