import { EMPTY, Observable, Subject, Subscription, throwError } from 'rxjs';
import { AguiEvent, UpstreamEvent } from '../../protocol/agui-events';
import { Outcome, Translation } from './mastra-to-agui';
import { GuardOptions, guardLifecycle, ReportedResult, Stopped } from './lifecycle-guard';
import { THREAD, RUN, checkStream, bare, inner, STARTED, FINISHED, of } from './run-lifecycle.spec-support';

describe('guardLifecycle (the operator)', () => {
  const t = (events: UpstreamEvent[], outcome?: Outcome): Translation => ({
    events,
    ...(outcome ? { outcome } : {}),
  });

  function guard(
    source: Observable<Translation>,
    options: Partial<GuardOptions> = {},
  ): { events: AguiEvent[]; done: Promise<void>; stops: Stopped[]; subscription: Subscription } {
    const events: AguiEvent[] = [];
    const stops: Stopped[] = [];
    let n = 0;
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const done = new Promise<void>((res, rej) => ([resolve, reject] = [res, rej]));
    const subscription = source
      .pipe(
        guardLifecycle({
          threadId: THREAD,
          runId: RUN,
          newId: () => `gen-${++n}`,
          end: (stopped) => {
            stops.push(stopped);
            return Promise.resolve({});
          },
          ...options,
        }),
      )
      .subscribe({ next: (e) => events.push(e), error: reject, complete: resolve });
    return { events, done, stops, subscription };
  }

  it('sends RUN_STARTED on subscription, before it subscribes to the upstream', () => {
    const seen: string[] = [];
    const upstream = new Observable<Translation>(() => {
      seen.push('upstream subscribed');
    });
    upstream
      .pipe(guardLifecycle({ threadId: THREAD, runId: RUN, end: () => Promise.resolve({}) }))
      .subscribe((event) => seen.push(event.type));
    expect(seen).toEqual(['RUN_STARTED', 'upstream subscribed']);
  });

  it('passes the translated events through the guard, then the terminal event from `end`, then completes', async () => {
    const upstream = new Subject<Translation>();
    const g = guard(upstream);
    upstream.next(t([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Hi' }]));
    upstream.next(t([{ type: 'TEXT_MESSAGE_END', messageId: 'm1' }], { kind: 'finished', result: 1 }));
    upstream.complete();
    await g.done;
    expect(g.stops).toEqual([{ outcome: { kind: 'finished', result: 1 } }]);
    expect(bare(g.events)).toEqual([
      STARTED,
      { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Hi' },
      { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      FINISHED,
    ]);
  });

  it('the terminal event waits for `end`, which may close what is open first; nothing follows it', async () => {
    const upstream = new Subject<Translation>();
    let record!: () => void;
    const recorded = new Promise<void>((resolve) => (record = resolve));
    const g = guard(upstream, {
      end: async (_stopped, closeOpen) => {
        closeOpen();
        await recorded;
        return { code: 'MODEL_ERROR', message: 'boom' };
      },
    });
    upstream.next(t([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Hi' }]));
    upstream.complete();
    await new Promise((r) => setImmediate(r));
    expect(g.events.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
    ]);
    record();
    await g.done;
    expect(bare(g.events.slice(-1))).toEqual([{ type: 'RUN_ERROR', message: 'boom', code: 'MODEL_ERROR' }]);
    checkStream(g.events);
  });

  it('an upstream that fails reaches `end` as its failure; the stream itself never errors', async () => {
    const failure = new Error('engine exploded');
    const g = guard(
      throwError(() => failure),
      {
        end: () => Promise.resolve({ code: 'INTERNAL', message: 'The run failed unexpectedly' }),
      },
    );
    await g.done;
    expect(bare(g.events)).toEqual([
      STARTED,
      { type: 'RUN_ERROR', message: 'The run failed unexpectedly', code: 'INTERNAL' },
    ]);
  });

  it('`end` failing ends the run with RUN_ERROR INTERNAL', async () => {
    const g = guard(EMPTY, { end: () => Promise.reject(new Error('database gone')) });
    await g.done;
    expect(bare(g.events)).toEqual([
      STARTED,
      { type: 'RUN_ERROR', message: 'The run failed unexpectedly', code: 'INTERNAL' },
    ]);
  });

  it('a reported result waits for its TOOL_CALL_END, and one for an ended call goes at once', async () => {
    const upstream = new Subject<Translation>();
    const results = new Subject<ReportedResult>();
    const g = guard(upstream, { results });
    upstream.next(
      t([{ type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'add', parentMessageId: 'p' }]),
    );
    results.next({ toolCallId: 'c1', content: { sum: 2 } });
    expect(of(g.events, 'TOOL_CALL_RESULT')).toEqual([]);
    upstream.next(t([{ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' }]));
    upstream.next(t([{ type: 'TOOL_CALL_END', toolCallId: 'c1' }]));
    upstream.next(
      t([{ type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'add', parentMessageId: 'p' }]),
    );
    upstream.next(t([{ type: 'TOOL_CALL_END', toolCallId: 'c2', args: { a: 5 } }]));
    results.next({ toolCallId: 'c2', content: 'six' });
    upstream.complete();
    // Reported after the upstream stopped: too late to be shown (or stored).
    results.next({ toolCallId: 'c3', content: 'late' });
    await g.done;
    expect(inner(g.events)).toEqual([
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'add', parentMessageId: 'p' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' },
      { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      { type: 'TOOL_CALL_RESULT', messageId: 'gen-1', toolCallId: 'c1', content: '{"sum":2}', role: 'tool' },
      { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'add', parentMessageId: 'p' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'c2', delta: '{"a":5}' },
      { type: 'TOOL_CALL_END', toolCallId: 'c2' },
      { type: 'TOOL_CALL_RESULT', messageId: 'gen-2', toolCallId: 'c2', content: 'six', role: 'tool' },
    ]);
    expect(results.observed).toBe(false);
  });

  it('unsubscribing releases the upstream (the engine) without ending the run', () => {
    let released = false;
    const g = guard(new Observable<Translation>(() => () => (released = true)));
    g.subscription.unsubscribe();
    expect(released).toBe(true);
    expect(g.stops).toEqual([]);
    expect(g.events.map((e) => e.type)).toEqual(['RUN_STARTED']);
  });
});
