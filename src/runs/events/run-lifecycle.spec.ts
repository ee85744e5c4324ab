import { UpstreamEvent } from '../../protocol/agui-events';
import { MastraChunk, MastraToAgui } from './mastra-to-agui';
import {
  isPlainObject,
  checkStream,
  harness,
  run,
  bare,
  inner,
  STARTED,
  FINISHED,
  of,
  harnessRun,
} from './run-lifecycle.spec-support';

// ---------------------------------------------------------------------------------------------------
// Example tests
// ---------------------------------------------------------------------------------------------------

describe('RunLifecycle', () => {
  describe('start and the terminal event', () => {
    it('start() emits RUN_STARTED once, echoing threadId and runId', () => {
      const h = harness();
      h.lifecycle.start();
      h.lifecycle.start();
      expect(bare(h.events)).toEqual([STARTED]);
      expect(h.lifecycle.ended).toBe(false);
    });

    it('the first pushed event starts the run', () => {
      const h = harness();
      h.lifecycle.push({ type: 'STEP_STARTED', stepName: 's' });
      expect(bare(h.events)).toEqual([STARTED, { type: 'STEP_STARTED', stepName: 's' }]);
    });

    it('nothing at all, then finish: RUN_STARTED and RUN_FINISHED only, without result', () => {
      const h = run([]);
      expect(bare(h.events)).toEqual([STARTED, FINISHED]);
      expect('result' in h.events[1]).toBe(false);
      expect(h.lifecycle.ended).toBe(true);
    });

    it('nothing at all, then fail: RUN_STARTED and RUN_ERROR {message, code}', () => {
      const h = run([], (l) => l.fail('MODEL_ERROR', 'boom'));
      expect(bare(h.events)).toEqual([STARTED, { type: 'RUN_ERROR', message: 'boom', code: 'MODEL_ERROR' }]);
    });

    it('fail with an empty message uses the code as message', () => {
      const h = run([], (l) => l.fail('INTERNAL', ''));
      expect(bare(h.events)[1]).toEqual({ type: 'RUN_ERROR', message: 'INTERNAL', code: 'INTERNAL' });
    });

    it.each([
      [{ answer: 42 }, { answer: 42 }],
      ['text', 'text'],
      [0, 0],
      [false, false],
    ])('finish(%j) carries result %j', (result, expected) => {
      expect(run([], (l) => l.finish(result)).events[1]).toMatchObject({
        type: 'RUN_FINISHED',
        result: expected,
      });
    });

    it.each([null, undefined])('finish(%s) leaves result out, never sends null', (result) => {
      const { events } = run([], (l) => l.finish(result));
      expect(Object.keys(events[1]).sort()).toEqual(['runId', 'threadId', 'timestamp', 'type']);
    });

    it('after the terminal event nothing more is emitted: no events, no second terminal, no restart', () => {
      const h = run([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'hi' }]);
      const before = h.events.length;
      h.lifecycle.push({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'late' });
      h.lifecycle.push({ type: 'TOOL_CALL_START', toolCallId: 'c', toolCallName: 'f' });
      h.lifecycle.push({ type: 'STEP_STARTED', stepName: 's' });
      h.lifecycle.start();
      h.lifecycle.fail('INTERNAL', 'too late');
      h.lifecycle.finish({ again: true });
      expect(h.events).toHaveLength(before);
      expect(h.events[before - 1].type).toBe('RUN_FINISHED');
    });

    it('fail after fail keeps the first error', () => {
      const h = run([], (l) => {
        l.fail('CANCELLED', 'The client disconnected');
        l.fail('INTERNAL', 'second');
      });
      expect(of(h.events, 'RUN_ERROR')).toEqual([expect.objectContaining({ code: 'CANCELLED' })]);
    });

    it('every event carries an integer epoch-millisecond timestamp of now', () => {
      const before = Date.now();
      const { events } = run([{ type: 'TEXT_MESSAGE_CONTENT', delta: 'x' }]);
      const after = Date.now();
      for (const e of events) {
        expect(Number.isInteger(e.timestamp)).toBe(true);
        expect(e.timestamp).toBeGreaterThanOrEqual(before);
        expect(e.timestamp).toBeLessThanOrEqual(after);
      }
    });
  });

  describe('text messages', () => {
    it('an unclosed text message is closed before RUN_FINISHED', () => {
      const { events } = run([
        { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Hel' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'lo' },
      ]);
      expect(bare(events)).toEqual([
        STARTED,
        { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Hel' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'lo' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
        FINISHED,
      ]);
    });

    it('an unclosed text message is closed before RUN_ERROR too', () => {
      const { events } = run([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'partial' }], (l) =>
        l.fail('MODEL_ERROR', 'cut'),
      );
      expect(bare(events).slice(-2)).toEqual([
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
        { type: 'RUN_ERROR', message: 'cut', code: 'MODEL_ERROR' },
      ]);
    });

    it('content without a start starts the message (with its id, or a new one)', () => {
      expect(inner(run([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm7', delta: 'hi' }]).events)).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'm7', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm7', delta: 'hi' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm7' },
      ]);
      expect(inner(run([{ type: 'TEXT_MESSAGE_CONTENT', delta: 'hi' }]).events)).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'gen-1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'gen-1', delta: 'hi' },
        { type: 'TEXT_MESSAGE_END', messageId: 'gen-1' },
      ]);
    });

    it('content without an id goes to the open message', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
            { type: 'TEXT_MESSAGE_CONTENT', delta: 'a' },
            { type: 'TEXT_MESSAGE_END' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'a' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      ]);
    });

    it.each([[''], [undefined]])('empty deltas (%j) are dropped and open nothing', (delta) => {
      const { events } = run([
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta },
        { type: 'TEXT_MESSAGE_CONTENT', delta },
      ]);
      expect(bare(events)).toEqual([STARTED, FINISHED]);
    });

    it('an empty delta inside an open message is dropped; the message itself is kept', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
            { type: 'TEXT_MESSAGE_CONTENT', delta: '' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      ]);
    });

    it('content for another message closes the open one first', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'x' },
            { type: 'TEXT_MESSAGE_CONTENT', messageId: 'b', delta: 'y' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'a', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'x' },
        { type: 'TEXT_MESSAGE_END', messageId: 'a' },
        { type: 'TEXT_MESSAGE_START', messageId: 'b', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'b', delta: 'y' },
        { type: 'TEXT_MESSAGE_END', messageId: 'b' },
      ]);
    });

    it('a repeated START of the open message is ignored; START of another closes the open one', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_START', messageId: 'a' },
            { type: 'TEXT_MESSAGE_START', messageId: 'a' },
            { type: 'TEXT_MESSAGE_START' },
            { type: 'TEXT_MESSAGE_START', messageId: 'b' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'a', role: 'assistant' },
        { type: 'TEXT_MESSAGE_END', messageId: 'a' },
        { type: 'TEXT_MESSAGE_START', messageId: 'b', role: 'assistant' },
        { type: 'TEXT_MESSAGE_END', messageId: 'b' },
      ]);
    });

    it('END of a message that is not open is ignored', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_END', messageId: 'ghost' },
            { type: 'TEXT_MESSAGE_END' },
            { type: 'TEXT_MESSAGE_START', messageId: 'a' },
            { type: 'TEXT_MESSAGE_END', messageId: 'ghost' },
            { type: 'TEXT_MESSAGE_CONTENT', delta: 'still open' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'a', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'still open' },
        { type: 'TEXT_MESSAGE_END', messageId: 'a' },
      ]);
    });

    it('a message id reused after its END gets a fresh wire id, and the upstream id keeps pointing at it', () => {
      expect(
        inner(
          run([
            { type: 'TEXT_MESSAGE_START', messageId: 'a' },
            { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'one' },
            { type: 'TEXT_MESSAGE_END', messageId: 'a' },
            { type: 'TEXT_MESSAGE_START', messageId: 'a' },
            { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'two' },
            { type: 'TEXT_MESSAGE_END', messageId: 'a' },
            { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'three' },
          ]).events,
        ),
      ).toEqual([
        { type: 'TEXT_MESSAGE_START', messageId: 'a', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'a', delta: 'one' },
        { type: 'TEXT_MESSAGE_END', messageId: 'a' },
        { type: 'TEXT_MESSAGE_START', messageId: 'gen-1', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'gen-1', delta: 'two' },
        { type: 'TEXT_MESSAGE_END', messageId: 'gen-1' },
        { type: 'TEXT_MESSAGE_START', messageId: 'gen-2', role: 'assistant' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'gen-2', delta: 'three' },
        { type: 'TEXT_MESSAGE_END', messageId: 'gen-2' },
      ]);
    });

    it('a message id that is already a tool call id gets a fresh wire id', () => {
      const { events } = run([
        { type: 'TOOL_CALL_START', toolCallId: 'x', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'x', delta: 'hi' },
      ]);
      expect(of(events, 'TEXT_MESSAGE_START')).toEqual([expect.objectContaining({ messageId: 'gen-1' })]);
    });
  });

  describe('reasoning', () => {
    it('a reasoning message is wrapped in REASONING_START/END', () => {
      expect(
        inner(
          run([
            { type: 'REASONING_MESSAGE_START', messageId: 'r1' },
            { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'think' },
            { type: 'REASONING_MESSAGE_END', messageId: 'r1' },
          ]).events,
        ),
      ).toEqual([
        { type: 'REASONING_START', messageId: 'r1' },
        { type: 'REASONING_MESSAGE_START', messageId: 'r1', role: 'reasoning' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'think' },
        { type: 'REASONING_MESSAGE_END', messageId: 'r1' },
        { type: 'REASONING_END', messageId: 'r1' },
      ]);
    });

    it('reasoning content without a start opens it; an unclosed one is closed at the terminal event', () => {
      expect(
        inner(
          run([{ type: 'REASONING_MESSAGE_CONTENT', delta: 'hmm' }], (l) => l.fail('CANCELLED', 'x')).events,
        ),
      ).toEqual([
        { type: 'REASONING_START', messageId: 'gen-1' },
        { type: 'REASONING_MESSAGE_START', messageId: 'gen-1', role: 'reasoning' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'gen-1', delta: 'hmm' },
        { type: 'REASONING_MESSAGE_END', messageId: 'gen-1' },
        { type: 'REASONING_END', messageId: 'gen-1' },
      ]);
    });

    it('END of another reasoning id is ignored; content of another id switches messages', () => {
      const { events } = run([
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'a' },
        { type: 'REASONING_MESSAGE_END', messageId: 'r9' },
        { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r2', delta: 'b' },
      ]);
      expect(inner(events).map((e) => `${e.type}:${(e as { messageId?: string }).messageId}`)).toEqual([
        'REASONING_START:r1',
        'REASONING_MESSAGE_START:r1',
        'REASONING_MESSAGE_CONTENT:r1',
        'REASONING_MESSAGE_END:r1',
        'REASONING_END:r1',
        'REASONING_START:r2',
        'REASONING_MESSAGE_START:r2',
        'REASONING_MESSAGE_CONTENT:r2',
        'REASONING_MESSAGE_END:r2',
        'REASONING_END:r2',
      ]);
    });

    // Regression: a reasoning id reused after its END is sent again as a new REASONING_MESSAGE_START with the same
    // id (text ids are renamed, reasoning ids are not). Through MastraToAgui this happens for any step
    // with two reasoning blocks (`${stepMessageId}-reasoning`), and the AG-UI client then merges both
    // blocks into one message.
    it('two reasoning blocks in one Mastra step become two reasoning messages with distinct ids', () => {
      const h = harness();
      const translator = new MastraToAgui(() => 'step-msg');
      const chunks: MastraChunk[] = [
        { type: 'step-start', payload: {} },
        { type: 'reasoning-start', payload: { id: 'r0' } },
        { type: 'reasoning-delta', payload: { id: 'r0', text: 'first' } },
        { type: 'reasoning-end', payload: { id: 'r0' } },
        { type: 'text-start', payload: { id: 't' } },
        { type: 'text-delta', payload: { id: 't', text: 'answer' } },
        { type: 'text-end', payload: { id: 't' } },
        { type: 'reasoning-start', payload: { id: 'r1' } },
        { type: 'reasoning-delta', payload: { id: 'r1', text: 'second' } },
        { type: 'reasoning-end', payload: { id: 'r1' } },
        { type: 'step-finish', payload: {} },
      ];
      for (const chunk of chunks) for (const e of translator.translate(chunk).events) h.lifecycle.push(e);
      h.lifecycle.finish();
      checkStream(h.events);
      const ids = of(h.events, 'REASONING_MESSAGE_START').map((e) => e.messageId);
      expect(ids).toHaveLength(2);
      expect(new Set(ids).size).toBe(2);
    });
  });

  describe('tool calls', () => {
    it('an unclosed tool call gets its arguments (one JSON delta) and END before the terminal event', () => {
      const { events } = run([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather', parentMessageId: 'm1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":"Par' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: 'is"}' },
      ]);
      expect(inner(events)).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather', parentMessageId: 'm1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":"Paris"}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      ]);
    });

    it('an error in the middle of tool arguments closes everything in order, then RUN_ERROR', () => {
      const { events } = run(
        [
          { type: 'STEP_STARTED', stepName: 'step-1' },
          { type: 'REASONING_MESSAGE_CONTENT', messageId: 'r1', delta: 'plan' },
          { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Checking' },
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather' },
          { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":"Par' },
        ],
        (l) => l.fail('MODEL_ERROR', 'stream cut'),
      );
      expect(bare(events).slice(-8)).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'weather', parentMessageId: 'm1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city":"Par"}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
        { type: 'REASONING_MESSAGE_END', messageId: 'r1' },
        { type: 'REASONING_END', messageId: 'r1' },
        { type: 'STEP_FINISHED', stepName: 'step-1' },
        { type: 'RUN_ERROR', message: 'stream cut', code: 'MODEL_ERROR' },
      ]);
    });

    it('ARGS are held back until the call ends, then sent as one delta', () => {
      const h = harness();
      h.lifecycle.push({
        type: 'TOOL_CALL_START',
        toolCallId: 'c1',
        toolCallName: 'f',
        parentMessageId: 'p',
      });
      h.lifecycle.push({ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":' });
      h.lifecycle.push({ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '1}' });
      expect(h.events.map((e) => e.type)).toEqual(['RUN_STARTED', 'TOOL_CALL_START']);
      expect(h.lifecycle.toolCallEnded('c1')).toBe(false);
      h.lifecycle.push({ type: 'TOOL_CALL_END', toolCallId: 'c1' });
      expect(bare(h.events.slice(1))).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      ]);
      expect(h.lifecycle.toolCallEnded('c1')).toBe(true);
      expect(h.lifecycle.toolCallEnded('unknown')).toBe(false);
    });

    it('the terminal event ends open calls: toolCallEnded is true afterwards', () => {
      const h = harness();
      h.lifecycle.push({
        type: 'TOOL_CALL_START',
        toolCallId: 'c1',
        toolCallName: 'f',
        parentMessageId: 'p',
      });
      h.lifecycle.fail('TOOL_RESULT_TIMEOUT', 'no result');
      expect(h.lifecycle.toolCallEnded('c1')).toBe(true);
      checkStream(h.events);
    });

    it('a START without id or name, or with an empty one, is dropped with a warning; so is everything for it', () => {
      const { events, warnings } = run([
        { type: 'TOOL_CALL_START', toolCallName: 'f' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1' },
        { type: 'TOOL_CALL_START', toolCallId: '', toolCallName: 'f' },
        { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: '' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: 'x' },
      ]);
      expect(bare(events)).toEqual([STARTED, FINISHED]);
      expect(warnings.filter((w) => w.includes('dropped TOOL_CALL_START'))).toHaveLength(4);
      expect(warnings.filter((w) => w.includes('dropped TOOL_CALL_RESULT'))).toHaveLength(1);
    });

    it('a repeated tool call id is dropped; args after END and a second END change nothing', () => {
      const { events, warnings } = run([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'first', parentMessageId: 'p' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'second', parentMessageId: 'p' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"b":2}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1', args: { c: 3 } },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'third', parentMessageId: 'p' },
      ]);
      expect(inner(events)).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'first', parentMessageId: 'p' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      ]);
      expect(warnings.filter((w) => w.includes('repeated id (c1)'))).toHaveLength(2);
    });

    it('a result for an unknown call is dropped with a warning', () => {
      const { events, warnings } = run([
        { type: 'TOOL_CALL_RESULT', toolCallId: 'nope', content: 'x' },
        { type: 'TOOL_CALL_RESULT', content: 'no id' },
      ]);
      expect(bare(events)).toEqual([STARTED, FINISHED]);
      expect(warnings).toEqual([
        'dropped TOOL_CALL_RESULT for an unknown or answered tool call (nope)',
        'dropped TOOL_CALL_RESULT for an unknown or answered tool call (-)',
      ]);
    });

    it('a second result for the same call is dropped', () => {
      const { events, warnings } = run([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'r1', content: 'first' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'r2', content: 'second' },
      ]);
      expect(of(events, 'TOOL_CALL_RESULT').map((e) => e.content)).toEqual(['first']);
      expect(warnings).toHaveLength(1);
    });

    it('a result for a call still streaming closes the call first', () => {
      expect(
        inner(
          run([
            { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":' },
            { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: { ok: true } },
          ]).events,
        ),
      ).toEqual([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":null}' },
        { type: 'TOOL_CALL_END', toolCallId: 'c1' },
        {
          type: 'TOOL_CALL_RESULT',
          messageId: 'gen-1',
          toolCallId: 'c1',
          content: '{"ok":true}',
          role: 'tool',
        },
      ]);
    });

    it.each([
      ['a string, as it is', 'sunny', 'sunny'],
      ['an empty string', '', ''],
      ['an object, as JSON', { tempC: 21, tags: ['a'] }, '{"tempC":21,"tags":["a"]}'],
      ['a number, as JSON', 0, '0'],
      ['null', null, 'null'],
      ['undefined, as null', undefined, 'null'],
      ['a string that looks like JSON, as it is', '{"x":1}', '{"x":1}'],
    ])('result content: %s', (_label, content, expected) => {
      const { events } = run([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'res-1', content },
      ]);
      expect(bare(of(events, 'TOOL_CALL_RESULT'))).toEqual([
        { type: 'TOOL_CALL_RESULT', messageId: 'res-1', toolCallId: 'c1', content: expected, role: 'tool' },
      ]);
    });

    // Regression: content JSON.stringify cannot serialize (a BigInt, a cycle) throws out of push() after the call
    // was marked answered, so no TOOL_CALL_RESULT is ever sent for it and a later one is dropped.
    it('a result JSON cannot serialize does not throw, and the call still gets a result', () => {
      const h = harness();
      h.lifecycle.push({
        type: 'TOOL_CALL_START',
        toolCallId: 'c1',
        toolCallName: 'count',
        parentMessageId: 'p',
      });
      expect(() =>
        h.lifecycle.push({ type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: { n: 1n } }),
      ).not.toThrow();
      h.lifecycle.finish();
      expect(of(h.events, 'TOOL_CALL_RESULT')).toHaveLength(1);
    });

    describe('parentMessageId', () => {
      it('names the text message of the step when there is one (open or just closed)', () => {
        const { events } = run([
          { type: 'TEXT_MESSAGE_START', messageId: 'm1' },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Let me look.' },
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f' },
          { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
          { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'f' },
        ]);
        expect(of(events, 'TOOL_CALL_START').map((e) => e.parentMessageId)).toEqual(['m1', 'm1']);
      });

      it('without text, calls of one step share a minted id; a new step mints another', () => {
        const { events } = run([
          { type: 'STEP_STARTED', stepName: 'step-1' },
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f' },
          { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'g' },
          { type: 'STEP_FINISHED', stepName: 'step-1' },
          { type: 'STEP_STARTED', stepName: 'step-2' },
          { type: 'TOOL_CALL_START', toolCallId: 'c3', toolCallName: 'f' },
        ]);
        expect(of(events, 'TOOL_CALL_START').map((e) => e.parentMessageId)).toEqual([
          'gen-1',
          'gen-1',
          'gen-2',
        ]);
      });

      it('a text message after a new step is the parent of that step, not the previous text', () => {
        const { events } = run([
          { type: 'STEP_STARTED', stepName: 'step-1' },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'a' },
          { type: 'STEP_FINISHED', stepName: 'step-1' },
          { type: 'STEP_STARTED', stepName: 'step-2' },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm2', delta: 'b' },
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f' },
        ]);
        expect(of(events, 'TOOL_CALL_START')[0].parentMessageId).toBe('m2');
      });

      it('an explicit parent wins', () => {
        const { events } = run([
          { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'a' },
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'other' },
        ]);
        expect(of(events, 'TOOL_CALL_START')[0].parentMessageId).toBe('other');
      });
    });

    describe('invalid JSON arguments', () => {
      const argsOf = (upstream: UpstreamEvent[]) => {
        const h = run([
          { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
          ...upstream,
        ]);
        return { args: of(h.events, 'TOOL_CALL_ARGS').map((e) => e.delta), warnings: h.warnings };
      };

      it('truncated arguments are repaired, without a warning', () => {
        expect(
          argsOf([
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"q":"weat' },
            { type: 'TOOL_CALL_END', toolCallId: 'c1' },
          ]),
        ).toEqual({ args: ['{"q":"weat"}'], warnings: [] });
        expect(argsOf([{ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":[1,2,' }]).args).toEqual([
          '{"a":[1,2]}',
        ]);
      });

      it('garbage becomes {} with a warning', () => {
        expect(
          argsOf([
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: 'not json' },
            { type: 'TOOL_CALL_END', toolCallId: 'c1' },
          ]),
        ).toEqual({ args: ['{}'], warnings: ['tool call c1 (f) streamed invalid JSON arguments; sent {}'] });
      });

      it('garbage with the parsed `args` hint on TOOL_CALL_END sends the hint, without a warning', () => {
        expect(
          argsOf([
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"city": Paris}' },
            { type: 'TOOL_CALL_END', toolCallId: 'c1', args: { city: 'Paris' } },
          ]),
        ).toEqual({ args: ['{"city":"Paris"}'], warnings: [] });
      });

      it('no streamed arguments with a hint sends the hint (a tool call that was not streamed)', () => {
        expect(
          argsOf([{ type: 'TOOL_CALL_END', toolCallId: 'c1', args: { a: [1, { b: 'c' }] } }]).args,
        ).toEqual(['{"a":[1,{"b":"c"}]}']);
      });

      it('valid streamed arguments win over the hint', () => {
        expect(
          argsOf([
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":1}' },
            { type: 'TOOL_CALL_END', toolCallId: 'c1', args: { b: 2 } },
          ]).args,
        ).toEqual(['{"a":1}']);
      });

      it.each([
        ['an array', '[1,2]', undefined, true],
        ['a JSON string', '"{}"', undefined, true],
        ['a number', '42', undefined, true],
        ['an array hint', 'oops', [1, 2], true],
        ['a string hint', 'oops', '{"a":1}', true],
        ['a null hint', 'oops', null, true],
        ['nothing at all', '', undefined, false],
        ['only whitespace', '  \n', undefined, false],
      ])('%s gives {} (warned: %s)', (_label, delta, hint, warned) => {
        const { args, warnings } = argsOf([
          { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta },
          { type: 'TOOL_CALL_END', toolCallId: 'c1', args: hint },
        ]);
        expect(args).toEqual(['{}']);
        expect(warnings).toHaveLength(warned ? 1 : 0);
      });

      it('non-string deltas are ignored', () => {
        expect(
          argsOf([
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"a":' },
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: 5 as unknown as string },
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1' },
            { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '2}' },
          ]).args,
        ).toEqual(['{"a":2}']);
      });

      // Regression (hostile upstream only): a hint that is an object but not a plain one is stringified as it is;
      // a Date gives a JSON string, so the ARGS are not a JSON object.
      it('a Date as hint still gives a JSON object', () => {
        const { args } = argsOf([{ type: 'TOOL_CALL_END', toolCallId: 'c1', args: new Date(0) }]);
        expect(isPlainObject(JSON.parse(args[0]))).toBe(true);
      });
    });
  });

  describe('steps', () => {
    it('STEP_STARTED/FINISHED pass through; unnamed steps are numbered', () => {
      expect(
        inner(
          run([
            { type: 'STEP_STARTED', stepName: 'plan' },
            { type: 'STEP_FINISHED', stepName: 'plan' },
            { type: 'STEP_STARTED' },
            { type: 'STEP_STARTED' },
            { type: 'STEP_FINISHED' },
          ]).events,
        ),
      ).toEqual([
        { type: 'STEP_STARTED', stepName: 'plan' },
        { type: 'STEP_FINISHED', stepName: 'plan' },
        { type: 'STEP_STARTED', stepName: 'step-1' },
        { type: 'STEP_STARTED', stepName: 'step-2' },
        { type: 'STEP_FINISHED', stepName: 'step-2' },
        { type: 'STEP_FINISHED', stepName: 'step-1' },
      ]);
    });

    it('a step started twice while open, or finished while not open, is ignored', () => {
      expect(
        inner(
          run([
            { type: 'STEP_FINISHED', stepName: 'ghost' },
            { type: 'STEP_FINISHED' },
            { type: 'STEP_STARTED', stepName: 's' },
            { type: 'STEP_STARTED', stepName: 's' },
            { type: 'STEP_FINISHED', stepName: 's' },
            { type: 'STEP_FINISHED', stepName: 's' },
          ]).events,
        ),
      ).toEqual([
        { type: 'STEP_STARTED', stepName: 's' },
        { type: 'STEP_FINISHED', stepName: 's' },
      ]);
    });

    it('open steps are finished before the terminal event, innermost first', () => {
      const { events } = run(
        [
          { type: 'STEP_STARTED', stepName: 'outer' },
          { type: 'STEP_STARTED', stepName: 'inner' },
        ],
        (l) => l.fail('SHUTTING_DOWN', 'bye'),
      );
      expect(bare(events).slice(-3)).toEqual([
        { type: 'STEP_FINISHED', stepName: 'inner' },
        { type: 'STEP_FINISHED', stepName: 'outer' },
        { type: 'RUN_ERROR', message: 'bye', code: 'SHUTTING_DOWN' },
      ]);
    });
  });

  describe('empty-string ids from upstream (once treated as present, sending empty ids)', () => {
    // Fix: treat '' like a missing id in RunLifecycle (`parent || this.parentMessageId || …`,
    // `upstreamId || this.newId()`, `messageId || this.newId()`).
    it('an empty parentMessageId is replaced by the step message id', () => {
      const { events } = harnessRun([
        { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'a' },
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: '' },
      ]);
      expect(of(events, 'TOOL_CALL_START')[0].parentMessageId).toBe('m1');
    });

    it('an empty text message id is replaced by a new id', () => {
      const { events } = harnessRun([{ type: 'TEXT_MESSAGE_CONTENT', messageId: '', delta: 'a' }]);
      expect(of(events, 'TEXT_MESSAGE_START')[0].messageId).not.toBe('');
    });

    it('an empty tool result message id is replaced by a new id', () => {
      const { events } = harnessRun([
        { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f', parentMessageId: 'p' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: '', content: 'x' },
      ]);
      expect(of(events, 'TOOL_CALL_RESULT')[0].messageId).not.toBe('');
    });
  });

  // Regression (hostile upstream only): a TOOL_CALL_RESULT messageId is taken as it is, even when it already
  // names another message of the run; the stored thread would get two messages with one id.
  it('a tool result message id that is already used gets a fresh id', () => {
    const { events } = harnessRun([
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'a' },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'f' },
      { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', messageId: 'm1', content: 'x' },
    ]);
    checkStream(events);
  });
});
