import { safeErrorMessage } from '../../common/errors';
import { UpstreamEvent } from '../../protocol/agui-events';
import { lastValueFrom, of, Subject, toArray } from 'rxjs';
import { MastraChunk, MastraToAgui, Outcome, translate } from './mastra-to-agui';

/** A translator whose step message ids are msg-1, msg-2, … */
function translator(): MastraToAgui {
  let n = 0;
  return new MastraToAgui(() => `msg-${++n}`);
}

/** Translates chunks in order: every event, and the outcomes in the order they came. */
function translateAll(
  t: MastraToAgui,
  chunks: MastraChunk[],
): { events: UpstreamEvent[]; outcomes: Outcome[] } {
  const events: UpstreamEvent[] = [];
  const outcomes: Outcome[] = [];
  for (const chunk of chunks) {
    const translation = t.translate(chunk);
    events.push(...translation.events);
    if (translation.outcome) outcomes.push(translation.outcome);
  }
  return { events, outcomes };
}

const c = (type: string, payload?: unknown): MastraChunk => ({ type, payload });

describe('MastraToAgui', () => {
  describe('single chunks', () => {
    it('step-start opens a numbered step with a fresh message id, step-finish closes it', () => {
      const t = translator();
      expect(t.translate(c('step-start', { messageId: 'mastra-id' }))).toEqual({
        events: [{ type: 'STEP_STARTED', stepName: 'step-1' }],
      });
      expect(t.translate(c('text-start', { id: 't' })).events).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'msg-1' },
      ]);
      expect(t.translate(c('step-finish', {}))).toEqual({
        events: [{ type: 'STEP_FINISHED', stepName: 'step-1' }],
      });
      expect(t.translate(c('step-start', {})).events).toEqual([{ type: 'STEP_STARTED', stepName: 'step-2' }]);
      expect(t.translate(c('step-finish', {})).events).toEqual([
        { type: 'STEP_FINISHED', stepName: 'step-2' },
      ]);
    });

    it('text-start / text-delta / text-end map to the step message, ignoring the model text id', () => {
      const t = translator();
      t.translate(c('step-start', {}));
      expect(
        translateAll(t, [
          c('text-start', { id: 'x' }),
          c('text-delta', { id: 'y', text: 'Hi' }),
          c('text-end', { id: 'z' }),
        ]),
      ).toEqual({
        events: [
          { type: 'TEXT_MESSAGE_START', messageId: 'msg-1' },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'Hi' },
          { type: 'TEXT_MESSAGE_END', messageId: 'msg-1' },
        ],
        outcomes: [],
      });
    });

    it('reasoning chunks map to a reasoning message of the step', () => {
      const t = translator();
      t.translate(c('step-start', {}));
      expect(
        translateAll(t, [
          c('reasoning-start', { id: 'r' }),
          c('reasoning-delta', { id: 'r', text: 'Hmm' }),
          c('reasoning-end', { id: 'r' }),
        ]).events,
      ).toEqual([
        { type: 'REASONING_MESSAGE_START', messageId: 'msg-1-reasoning-r' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'msg-1-reasoning-r', delta: 'Hmm' },
        { type: 'REASONING_MESSAGE_END', messageId: 'msg-1-reasoning-r' },
      ]);
    });

    it('a streamed tool call: start, argument deltas, then END with the parsed args at tool-call', () => {
      const t = translator();
      t.translate(c('step-start', {}));
      expect(
        translateAll(t, [
          c('tool-call-input-streaming-start', { toolCallId: 'call-1', toolName: 'weather' }),
          c('tool-call-delta', { toolCallId: 'call-1', toolName: 'weather', argsTextDelta: '{"city":' }),
          c('tool-call-delta', { toolCallId: 'call-1', toolName: 'weather', argsTextDelta: '"Paris"}' }),
          c('tool-call-input-streaming-end', { toolCallId: 'call-1' }),
          c('tool-call', { toolCallId: 'call-1', toolName: 'weather', args: { city: 'Paris' } }),
        ]).events,
      ).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'call-1', toolCallName: 'weather', parentMessageId: 'msg-1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'call-1', delta: '{"city":' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'call-1', delta: '"Paris"}' },
        { type: 'TOOL_CALL_END', toolCallId: 'call-1', args: { city: 'Paris' } },
      ]);
    });

    it('a tool call that was not streamed gets its START and its END at once', () => {
      const t = translator();
      t.translate(c('step-start', {}));
      expect(t.translate(c('tool-call', { toolCallId: 'call-9', toolName: 'now', args: {} }))).toEqual({
        events: [
          { type: 'TOOL_CALL_START', toolCallId: 'call-9', toolCallName: 'now', parentMessageId: 'msg-1' },
          { type: 'TOOL_CALL_END', toolCallId: 'call-9', args: {} },
        ],
      });
    });

    it('tool-result becomes TOOL_CALL_RESULT with the result as it is; a missing result is null', () => {
      const t = translator();
      expect(
        t.translate(c('tool-result', { toolCallId: 'call-1', toolName: 'w', result: { tempC: 21 } })),
      ).toEqual({
        events: [{ type: 'TOOL_CALL_RESULT', toolCallId: 'call-1', content: { tempC: 21 } }],
      });
      expect(
        t.translate(c('tool-result', { toolCallId: 'call-2', toolName: 'w', result: 'sunny' })).events,
      ).toEqual([{ type: 'TOOL_CALL_RESULT', toolCallId: 'call-2', content: 'sunny' }]);
      expect(t.translate(c('tool-result', { toolCallId: 'call-3', toolName: 'w' })).events).toEqual([
        { type: 'TOOL_CALL_RESULT', toolCallId: 'call-3', content: null },
      ]);
    });

    it('tool-error becomes a TOOL_CALL_RESULT carrying {error: message}, first line only', () => {
      const t = translator();
      expect(
        t.translate(
          c('tool-error', { toolCallId: 'call-1', error: new Error('City not found\n    at secret.ts:1') }),
        ),
      ).toEqual({
        events: [{ type: 'TOOL_CALL_RESULT', toolCallId: 'call-1', content: { error: 'City not found' } }],
      });
      expect(t.translate(c('tool-error', { toolCallId: 'call-2', error: {} })).events).toEqual([
        { type: 'TOOL_CALL_RESULT', toolCallId: 'call-2', content: { error: 'Tool failed' } },
      ]);
    });

    it.each([
      [c('error', { error: new Error('provider 500') }), { kind: 'error', message: 'provider 500' }],
      [c('error', { error: 'rate limited' }), { kind: 'error', message: 'rate limited' }],
      [c('error', { error: { message: 'boom', name: 'Error' } }), { kind: 'error', message: 'boom' }],
      [c('error', {}), { kind: 'error', message: 'The model failed' }],
      [c('error'), { kind: 'error', message: 'The model failed' }],
      [c('abort', {}), { kind: 'aborted' }],
      [c('finish', { stepResult: { reason: 'stop' } }), { kind: 'finished' }],
    ])('%j ends the run: %j', (chunk, outcome) => {
      expect(translator().translate(chunk)).toEqual({ events: [], outcome });
    });

    it.each(['start', 'tool-call-input-streaming-end', 'raw', 'source', 'file', 'watch', 'something-new'])(
      '%s produces nothing',
      (type) => {
        expect(translator().translate(c(type, { id: 'x', toolCallId: 'y' }))).toEqual({ events: [] });
      },
    );

    it('a chunk without payload does not throw; its missing fields stay missing for the guard to judge', () => {
      const t = translator();
      t.translate(c('step-start'));
      expect(t.translate(c('text-delta')).events).toEqual([
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: undefined },
      ]);
      expect(t.translate(c('tool-call-delta')).events).toEqual([
        { type: 'TOOL_CALL_ARGS', toolCallId: undefined, delta: undefined },
      ]);
    });
  });

  describe('steps and message ids', () => {
    /** A two-step tool loop as Mastra streams it: text + tool call, tool result, then the answer. */
    const toolLoop: MastraChunk[] = [
      c('start', {}),
      c('step-start', {}),
      c('text-start', { id: 't' }),
      c('text-delta', { id: 't', text: 'Let me check. ' }),
      c('text-end', { id: 't' }),
      c('tool-call-input-streaming-start', { toolCallId: 'a', toolName: 'weather' }),
      c('tool-call-delta', { toolCallId: 'a', argsTextDelta: '{"city":"Paris"}' }),
      c('tool-call-input-streaming-end', { toolCallId: 'a' }),
      c('tool-call', { toolCallId: 'a', toolName: 'weather', args: { city: 'Paris' } }),
      c('tool-call', { toolCallId: 'b', toolName: 'time', args: {} }),
      c('tool-result', { toolCallId: 'a', toolName: 'weather', result: { tempC: 21 } }),
      c('tool-result', { toolCallId: 'b', toolName: 'time', result: '12:00' }),
      c('step-finish', {}),
      c('step-start', {}),
      c('text-start', { id: 't' }),
      c('text-delta', { id: 't', text: 'It is 21°C.' }),
      c('text-end', { id: 't' }),
      c('step-finish', {}),
      c('finish', {}),
    ];

    it('text and tool calls of a step share its message id; the next step gets another', () => {
      const { events, outcomes } = translateAll(translator(), toolLoop);
      const starts = events.filter((e) => e.type === 'TEXT_MESSAGE_START').map((e) => e.messageId);
      const parents = events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => e.parentMessageId);
      expect(starts).toEqual(['msg-1', 'msg-2']);
      expect(parents).toEqual(['msg-1', 'msg-1']);
      expect(outcomes).toEqual([{ kind: 'finished' }]);
    });

    it('with the default id source, step message ids are distinct uuids', () => {
      const { events } = translateAll(new MastraToAgui(), toolLoop);
      const starts = events.filter((e) => e.type === 'TEXT_MESSAGE_START').map((e) => e.messageId!);
      const parent = events.find((e) => e.type === 'TOOL_CALL_START')!;
      expect(starts).toHaveLength(2);
      expect(starts[0]).not.toBe(starts[1]);
      for (const id of starts)
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(parent).toMatchObject({ parentMessageId: starts[0] });
    });

    it('the whole loop translates to the expected events, in order', () => {
      expect(translateAll(translator(), toolLoop).events).toEqual([
        { type: 'STEP_STARTED', stepName: 'step-1' },
        { type: 'TEXT_MESSAGE_START', messageId: 'msg-1' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'Let me check. ' },
        { type: 'TEXT_MESSAGE_END', messageId: 'msg-1' },
        { type: 'TOOL_CALL_START', toolCallId: 'a', toolCallName: 'weather', parentMessageId: 'msg-1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'a', delta: '{"city":"Paris"}' },
        { type: 'TOOL_CALL_END', toolCallId: 'a', args: { city: 'Paris' } },
        { type: 'TOOL_CALL_START', toolCallId: 'b', toolCallName: 'time', parentMessageId: 'msg-1' },
        { type: 'TOOL_CALL_END', toolCallId: 'b', args: {} },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'a', content: { tempC: 21 } },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'b', content: '12:00' },
        { type: 'STEP_FINISHED', stepName: 'step-1' },
        { type: 'STEP_STARTED', stepName: 'step-2' },
        { type: 'TEXT_MESSAGE_START', messageId: 'msg-2' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-2', delta: 'It is 21°C.' },
        { type: 'TEXT_MESSAGE_END', messageId: 'msg-2' },
        { type: 'STEP_FINISHED', stepName: 'step-2' },
      ]);
    });

    it('a tool-only step names its own message id as parent, not the previous step text', () => {
      const { events } = translateAll(translator(), [
        c('step-start', {}),
        c('text-start', {}),
        c('text-delta', { text: 'a' }),
        c('text-end', {}),
        c('step-finish', {}),
        c('step-start', {}),
        c('tool-call', { toolCallId: 'x', toolName: 'f', args: {} }),
      ]);
      expect(events.find((e) => e.type === 'TOOL_CALL_START')).toMatchObject({ parentMessageId: 'msg-2' });
    });

    it('translators are independent: each run numbers its own steps', () => {
      const a = translator();
      const b = translator();
      a.translate(c('step-start', {}));
      a.translate(c('step-start', {}));
      expect(b.translate(c('step-start', {})).events).toEqual([{ type: 'STEP_STARTED', stepName: 'step-1' }]);
    });
  });
});

describe('translate() (the operator)', () => {
  it('gives one translation per chunk that has events or an outcome, and completes after the first outcome', async () => {
    let n = 0;
    const chunks = [
      c('start', {}),
      c('step-start', {}),
      c('text-delta', { text: 'Hi' }),
      c('step-finish', {}),
      c('finish', {}),
      c('text-delta', { text: 'after the end' }),
    ];
    const translations = await lastValueFrom(
      of(...chunks).pipe(
        translate(() => `msg-${++n}`),
        toArray(),
      ),
    );
    expect(translations).toEqual([
      { events: [{ type: 'STEP_STARTED', stepName: 'step-1' }] },
      { events: [{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg-1', delta: 'Hi' }] },
      { events: [{ type: 'STEP_FINISHED', stepName: 'step-1' }] },
      { events: [], outcome: { kind: 'finished' } },
    ]);
  });

  it('the first outcome unsubscribes from the chunks: the engine is told to stop sending', () => {
    const chunks = new Subject<MastraChunk>();
    const seen: unknown[] = [];
    chunks.pipe(translate()).subscribe((t) => seen.push(t));
    chunks.next(c('error', { error: new Error('boom') }));
    expect(seen).toEqual([{ events: [], outcome: { kind: 'error', message: 'boom' } }]);
    expect(chunks.observed).toBe(false);
  });

  it('each subscription translates with a translator of its own', async () => {
    const steps = of(c('step-start', {}), c('step-finish', {}));
    const translated = steps.pipe(translate());
    const [a, b] = await Promise.all([
      lastValueFrom(translated.pipe(toArray())),
      lastValueFrom(translated.pipe(toArray())),
    ]);
    expect(a).toEqual(b);
    expect(a[0]).toEqual({ events: [{ type: 'STEP_STARTED', stepName: 'step-1' }] });
  });
});

describe('safeErrorMessage', () => {
  it.each([
    ['a string', 'quota exceeded', 'quota exceeded'],
    ['an Error', new Error('bad gateway'), 'bad gateway'],
    ['an object with a message', { message: 'nope' }, 'nope'],
    ['a multi-line message (stack-like)', new Error('first line\n  at x (/srv/app.js:1:1)'), 'first line'],
    ['surrounding whitespace', '  padded  \nmore', 'padded'],
  ])('%s gives its first line', (_label, error, expected) => {
    expect(safeErrorMessage(error, 'fallback')).toBe(expected);
  });

  it.each([
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['an empty string', ''],
    ['a blank first line', '   \nsecond'],
    ['a non-string message', { message: 123 }],
  ])('%s gives the fallback', (_label, error) => {
    expect(safeErrorMessage(error, 'fallback')).toBe('fallback');
  });

  it('is bounded to 500 characters', () => {
    expect(safeErrorMessage('x'.repeat(2000), 'f')).toBe('x'.repeat(500));
  });
});
