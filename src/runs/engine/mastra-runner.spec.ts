import { Agent } from '@mastra/core/agent';
import { noopLogger } from '@mastra/core/logger';
import type { LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { first, firstValueFrom, lastValueFrom, Observable, tap, toArray } from 'rxjs';
import { abortableModel } from '../../agents/abortable-model';
import { ScriptedModel } from '../../agents/scripted-model';
import { ENGINE_STARTS_PER_TURN, MastraRunner } from './mastra-runner';
import { MastraChunk } from '../events/mastra-to-agui';

/** The scripted model, keeping the abort signal of every provider call it gets. */
class SignalRecordingModel extends ScriptedModel {
  readonly signals: Array<AbortSignal | undefined> = [];

  override doStream(options: LanguageModelV3CallOptions) {
    this.signals.push(options.abortSignal);
    return super.doStream(options);
  }
}

function agentOn(model: SignalRecordingModel): Agent {
  const agent = new Agent({
    id: 'runner-test',
    name: 'Runner test',
    instructions: 'You are a test agent.',
    // As the service's agents are built: the call's signal reaches the provider through the model.
    model: abortableModel(model),
  });
  agent.__setLogger(noopLogger);
  return agent;
}

const collect = (chunks$: Observable<MastraChunk>) => lastValueFrom(chunks$.pipe(toArray()));
const textOf = (chunks: MastraChunk[]) =>
  chunks
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.payload.text as string)
    .join('');

/** Resolves once `signal` aborts (or rejects after `ms`). */
const aborted = (signal: AbortSignal, ms = 5000) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(() => reject(new Error('the provider call was not aborted')), ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

describe('MastraRunner (a real Mastra agent on the scripted model)', () => {
  const runner = new MastraRunner();
  // Mastra logs an aborted model call a moment after the abort: let it, before the suite ends.
  afterAll(() => new Promise((resolve) => setTimeout(resolve, 500)));

  it("streams the agent's fullStream chunks in order, and completes after the last", async () => {
    const chunks = await collect(runner.stream(agentOn(new SignalRecordingModel()), 'hello world'));
    const types = chunks.map((c) => c.type);
    expect(types[0]).toBe('start');
    expect(types).toEqual(expect.arrayContaining(['step-start', 'text-start', 'text-end', 'step-finish']));
    expect(types[types.length - 1]).toBe('finish');
    expect(types.indexOf('text-start')).toBeLessThan(types.indexOf('text-delta'));
    expect(types.lastIndexOf('text-delta')).toBeLessThan(types.indexOf('text-end'));
    expect(textOf(chunks)).toBe('You said: hello world');
  });

  it('deltas in separate event-loop turns stay separate chunks', async () => {
    // Plain text comes one word per timer tick, as from a network.
    const chunks = await collect(runner.stream(agentOn(new SignalRecordingModel()), 'one two three four'));
    expect(chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text)).toEqual([
      'You ',
      'said: ',
      'one ',
      'two ',
      'three ',
      'four',
    ]);
  });

  it('the deltas of one event-loop turn come out as one chunk: 5000 deltas are about 10 chunks', async () => {
    const agent = agentOn(new SignalRecordingModel());
    const raw = await agent.stream('/bench 5000');
    let rawDeltas = 0;
    for await (const chunk of raw.fullStream as unknown as AsyncIterable<MastraChunk>) {
      if (chunk.type === 'text-delta') rawDeltas++;
    }
    expect(rawDeltas).toBe(5000);

    const chunks = await collect(runner.stream(agent, '/bench 5000'));
    const deltas = chunks.filter((c) => c.type === 'text-delta');
    expect(textOf(chunks)).toBe('x '.repeat(5000));
    // The scripted model hands over 1024 parts per turn.
    expect(deltas.length).toBeGreaterThanOrEqual(5);
    expect(deltas.length).toBeLessThanOrEqual(12);
    // Batching never moves text across another chunk.
    const types = chunks.map((c) => c.type);
    expect(types.indexOf('text-start')).toBeLessThan(types.indexOf('text-delta'));
    expect(types.lastIndexOf('text-delta')).toBeLessThan(types.indexOf('text-end'));
  });

  it("the run's first delta comes out alone, within its turn; the rest of the turn is one chunk", async () => {
    const agent = agentOn(new SignalRecordingModel());
    let turnEnded = false;
    const seen: Array<{ text: string; turnEnded: boolean }> = [];
    await new Promise<void>((resolve, reject) =>
      runner.stream(agent, '/bench 50').subscribe({
        next: (c) => {
          if (c.type !== 'text-delta') return;
          if (!seen.length) setImmediate(() => (turnEnded = true));
          seen.push({ text: c.payload.text, turnEnded });
        },
        complete: resolve,
        error: reject,
      }),
    );
    expect(seen.map((d) => d.text)).toEqual(['x ', 'x '.repeat(49)]);
    expect(seen[0].turnEnded).toBe(false);
  });

  it('passes the options to agent.stream and keeps the context entries for the tools and model', async () => {
    const agent = agentOn(new SignalRecordingModel());
    const chunks = await collect(
      runner.stream(agent, '/settings', { options: { modelSettings: { temperature: 0.25 } } }),
    );
    expect(JSON.parse(textOf(chunks))).toMatchObject({ temperature: 0.25 });
  });

  it('unsubscribing cancels the reading and aborts the provider call', async () => {
    const model = new SignalRecordingModel();
    // The first word, then the subscription ends: the rest of the answer is never waited for.
    const delta = await firstValueFrom(
      runner
        .stream(agentOn(model), '/slow 200 one two three four five six seven')
        .pipe(first((c) => c.type === 'text-delta')),
    );
    expect(delta.payload.text).toBe('You ');
    expect(model.signals[0]!.aborted).toBe(true);
  });

  it('the signal aborting stops the call and completes the stream, keeping the text already read', async () => {
    const model = new SignalRecordingModel();
    const stop = new AbortController();
    const started = Date.now();
    const chunks = await collect(
      runner.stream(agentOn(model), '/slow 300 one two three four five six', { signal: stop.signal }).pipe(
        tap((c) => {
          if (c.type === 'text-delta') stop.abort(new Error('stopped'));
        }),
      ),
    );
    expect(Date.now() - started).toBeLessThan(1500);
    expect(textOf(chunks)).toBe('You ');
    expect(chunks.map((c) => c.type)).not.toContain('finish');
    await aborted(model.signals[0]!);
  });

  it('a signal aborted before the subscription makes no call at all', async () => {
    const model = new SignalRecordingModel();
    const stop = new AbortController();
    stop.abort();
    expect(await collect(runner.stream(agentOn(model), 'hello', { signal: stop.signal }))).toEqual([]);
    expect(model.signals).toEqual([]);
  });

  it('each subscription is a call of its own', async () => {
    const model = new SignalRecordingModel();
    const chunks$ = runner.stream(agentOn(model), '/bench 3');
    const [a, b] = await Promise.all([collect(chunks$), collect(chunks$)]);
    expect(textOf(a)).toBe('x x x ');
    expect(textOf(b)).toBe('x x x ');
    expect(model.signals).toHaveLength(2);
    expect(model.signals[0]).not.toBe(model.signals[1]);
  });

  it('starts at most ENGINE_STARTS_PER_TURN calls in one turn of the event loop, the others in the next turns, in order', async () => {
    let turn = 0;
    const started: Array<{ turn: number; text: unknown }> = [];
    const base = agentOn(new SignalRecordingModel());
    // The agent, each call's start recorded with the turn it was made in.
    const agent = Object.assign(Object.create(base) as Agent, {
      stream(messages: unknown, options: unknown) {
        started.push({ turn, text: messages });
        return base.stream(messages as never, options as never);
      },
    });
    // The turns counted from one where no start is pending (an earlier test's share is spent).
    for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    let counting = true;
    const count = () => setImmediate(() => counting && (turn++, count()));
    count();
    const runs = 3 * ENGINE_STARTS_PER_TURN + 1;
    const texts = Array.from({ length: runs }, (_, i) => `/bench ${i + 1}`);
    const answers = await Promise.all(texts.map((text) => collect(runner.stream(agent, text))));
    counting = false;
    expect(answers.map(textOf)).toEqual(texts.map((_, i) => 'x '.repeat(i + 1)));
    expect(started.map((s) => s.text)).toEqual(texts);
    const perTurn = new Map<number, number>();
    for (const s of started) perTurn.set(s.turn, (perTurn.get(s.turn) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBe(ENGINE_STARTS_PER_TURN);
    expect(perTurn.size).toBeGreaterThanOrEqual(4);
  });
});
