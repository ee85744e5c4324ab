import type { LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import fc from 'fast-check';
import { MAX_DELTAS, PARTS_PER_TURN, planScript, ScriptedModel, wordDeltas } from './scripted-model';
import { modelToolName } from '../protocol/tool-names';

type Part = LanguageModelV3StreamPart;
type Message = LanguageModelV3Prompt[number];

const user = (...texts: string[]): Message => ({
  role: 'user',
  content: texts.map((text) => ({ type: 'text' as const, text })),
});
const system = (content: string): Message => ({ role: 'system', content });
const toolCall = (toolCallId: string, toolName: string): Message => ({
  role: 'assistant',
  content: [{ type: 'tool-call', toolCallId, toolName, input: {} }],
});
const toolResult = (toolCallId: string, toolName: string, output: any): Message => ({
  role: 'tool',
  content: [{ type: 'tool-result', toolCallId, toolName, output }],
});

const plan = (...prompt: Message[]) => planScript(prompt);
const types = (parts: Part[]) => parts.map((p) => p.type);
const deltasOf = (parts: Part[], type: 'text-delta' | 'reasoning-delta' | 'tool-input-delta') =>
  parts.flatMap((p) => (p.type === type ? [p.delta] : []));
const textOf = (parts: Part[]) => deltasOf(parts, 'text-delta').join('');
const finishReason = (parts: Part[]) => {
  const last = parts[parts.length - 1];
  return last.type === 'finish' ? last.finishReason.unified : undefined;
};

/** A plain text answer: text-start, word deltas, text-end, finish(stop). */
function expectTextAnswer(parts: Part[], text: string): void {
  const deltas = deltasOf(parts, 'text-delta');
  expect(types(parts)).toEqual(['text-start', ...deltas.map(() => 'text-delta'), 'text-end', 'finish']);
  expect(deltas.join('')).toBe(text);
  expect(finishReason(parts)).toBe('stop');
}

async function readAll(stream: ReadableStream<Part>): Promise<Part[]> {
  const parts: Part[] = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return parts;
    parts.push(value);
  }
}

describe('wordDeltas', () => {
  it.each([
    ['You said: hello world', ['You ', 'said: ', 'hello ', 'world']],
    ['  lead and trail  ', ['  lead ', 'and ', 'trail  ']],
    ['a\n\nb\tc', ['a\n\n', 'b\t', 'c']],
    ['one', ['one']],
    ['   ', ['   ']],
    ['', []],
  ])('%j → %j', (text, deltas) => {
    expect(wordDeltas(text)).toEqual(deltas);
  });

  it('deltas concatenate back to the text exactly, none empty, at most one word each', () => {
    const text = fc.oneof(
      fc.string(),
      fc
        .array(fc.constantFrom('word', ' ', '  ', '\n', '\t', 'é', '🙂', 'x.y'), { maxLength: 20 })
        .map((p) => p.join('')),
    );
    fc.assert(
      fc.property(text, (s) => {
        const deltas = wordDeltas(s);
        expect(deltas.join('')).toBe(s);
        for (const d of deltas) {
          expect(d.length).toBeGreaterThan(0);
          expect(d.trim().split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(1);
        }
        expect(deltas.length).toBe(s.trim() ? s.trim().split(/\s+/).length : s ? 1 : 0);
      }),
      { numRuns: 500 },
    );
  });
});

describe('planScript', () => {
  describe('plain text', () => {
    it('answers "You said: <text>" in several word deltas', () => {
      const script = plan(user('hello big world'));
      expectTextAnswer(script.parts, 'You said: hello big world');
      expect(deltasOf(script.parts, 'text-delta')).toEqual(['You ', 'said: ', 'hello ', 'big ', 'world']);
      expect(script.delayMs).toBe('tick');
    });

    it('reads the last user message only, trimmed, its text parts joined by newlines', () => {
      const script = plan(system('be nice'), user('first question'), user('  line one ', 'line two  '));
      expectTextAnswer(script.parts, 'You said: line one \nline two');
    });

    it('a prompt without a user message still answers', () => {
      expectTextAnswer(plan(system('only system')).parts, 'You said: ');
    });

    it('an unknown command is plain text', () => {
      expectTextAnswer(plan(user('/unknown thing')).parts, 'You said: /unknown thing');
    });

    it('the text deltas share one text id', () => {
      const ids = plan(user('a b c')).parts.flatMap((p) => ('id' in p ? [p.id] : []));
      expect(new Set(ids).size).toBe(1);
    });
  });

  describe('/tool', () => {
    it('a /tool line calls that tool with those args, streamed as input deltas', () => {
      const { parts, delayMs } = plan(user('/tool weather {"city":"Paris"}'));
      expect(types(parts)).toEqual([
        'tool-input-start',
        'tool-input-delta',
        'tool-input-delta',
        'tool-input-end',
        'tool-call',
        'finish',
      ]);
      const [start, , , end, callPart] = parts;
      expect(start).toMatchObject({ type: 'tool-input-start', toolName: 'weather' });
      const id = (start as { id: string }).id;
      expect(end).toEqual({ type: 'tool-input-end', id });
      expect(callPart).toEqual({
        type: 'tool-call',
        toolCallId: id,
        toolName: 'weather',
        input: '{"city":"Paris"}',
      });
      expect(deltasOf(parts, 'tool-input-delta').join('')).toBe('{"city":"Paris"}');
      expect(finishReason(parts)).toBe('tool-calls');
      expect(delayMs).toBe(0);
    });

    it('several /tool lines make several calls in one step, with distinct ids; other lines are ignored', () => {
      const { parts } = plan(
        user('please:\n/tool add {"a":1,"b":2}\nand\n  /tool now\n/tool echo {"text":"x y"}'),
      );
      const calls = parts.filter((p) => p.type === 'tool-call');
      expect(calls.map((c) => [c.toolName, JSON.parse(c.input)])).toEqual([
        ['add', { a: 1, b: 2 }],
        ['now', {}],
        ['echo', { text: 'x y' }],
      ]);
      expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(3);
      expect(parts.filter((p) => p.type === 'text-delta')).toEqual([]);
      expect(finishReason(parts)).toBe('tool-calls');
    });

    it('tool call ids are unique across scripts', () => {
      const id = () => plan(user('/tool t {}')).parts.find((p) => p.type === 'tool-call')!.toolCallId;
      expect(id()).not.toBe(id());
    });

    it('tool results at the end of the prompt are reported as "Tool <name> returned <json>"', () => {
      const { parts } = plan(
        user('/tool add {"a":1}'),
        toolCall('c1', 'add'),
        toolResult('c1', 'add', { type: 'json', value: { sum: 2 } }),
      );
      expectTextAnswer(parts, 'Tool add returned {"sum":2}');
    });

    it('several results, in one or several tool messages, give one line each, in order', () => {
      const { parts } = plan(
        user('/tool a {}\n/tool b {}\n/tool c {}'),
        {
          role: 'assistant',
          content: ['a', 'b', 'c'].map((n) => ({
            type: 'tool-call' as const,
            toolCallId: n,
            toolName: n,
            input: {},
          })),
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'a', toolName: 'a', output: { type: 'json', value: [1] } },
            { type: 'tool-result', toolCallId: 'b', toolName: 'b', output: { type: 'text', value: 'plain' } },
          ],
        },
        toolResult('c', 'c', { type: 'error-text', value: 'failed' }),
      );
      expect(textOf(parts)).toBe('Tool a returned [1]\nTool b returned "plain"\nTool c returned "failed"');
    });

    it('a result without a value is reported as null', () => {
      const { parts } = plan(
        user('/tool x {}'),
        toolCall('c', 'x'),
        toolResult('c', 'x', { type: 'execution-denied' }),
      );
      expect(textOf(parts)).toBe('Tool x returned null');
    });

    it('tool results earlier in the history do not count once a user spoke again', () => {
      const { parts } = plan(
        user('/tool add {}'),
        toolCall('c1', 'add'),
        toolResult('c1', 'add', { type: 'json', value: 1 }),
        user('thanks'),
      );
      expect(textOf(parts)).toBe('You said: thanks');
    });
  });

  describe('/error', () => {
    it('streams some text, then fails with the given message and no finish', () => {
      const { parts } = plan(user('/error the model broke'));
      expect(types(parts)).toEqual(['text-start', 'text-delta', 'text-delta', 'text-delta', 'error']);
      const error = parts[parts.length - 1] as { error: Error };
      expect(error.error).toBeInstanceOf(Error);
      expect(error.error.message).toBe('the model broke');
    });

    it('without a message it fails with a default one', () => {
      const { parts } = plan(user('/error'));
      expect((parts[parts.length - 1] as { error: Error }).error.message).toBe('Scripted model failure');
    });
  });

  describe('/slow', () => {
    it('streams like plain text, waiting <ms> between deltas', () => {
      const script = plan(user('/slow 250 take your time'));
      expectTextAnswer(script.parts, 'You said: take your time');
      expect(script.delayMs).toBe(250);
    });

    it.each([
      ['/slow', 100, 'You said: '],
      ['/slow -5 hi', 100, 'You said: hi'],
      ['/slow 999999 hi', 60_000, 'You said: hi'],
    ])('%j waits %d ms', (text, delayMs, answer) => {
      const script = plan(user(text));
      expect(script.delayMs).toBe(delayMs);
      expect(textOf(script.parts)).toBe(answer);
    });
  });

  describe('/reason', () => {
    it('streams reasoning first, then the text', () => {
      const { parts } = plan(user('/reason why is the sky blue'));
      const reasoning = deltasOf(parts, 'reasoning-delta');
      expect(types(parts)).toEqual([
        'reasoning-start',
        ...reasoning.map(() => 'reasoning-delta'),
        'reasoning-end',
        'text-start',
        ...deltasOf(parts, 'text-delta').map(() => 'text-delta'),
        'text-end',
        'finish',
      ]);
      expect(reasoning.join('')).toBe('Thinking about: why is the sky blue');
      expect(reasoning.length).toBeGreaterThan(1);
      expect(textOf(parts)).toBe('why is the sky blue');
    });

    it('without text it still reasons and answers', () => {
      const { parts } = plan(user('/reason'));
      expect(deltasOf(parts, 'reasoning-delta').join('')).toBe('Thinking about: ');
      expect(textOf(parts)).toBe('Done thinking.');
    });
  });

  describe('/json', () => {
    it.each(['{"a":1,"b":[true,null]}', '{\n  "spaced":  "out"\n}', '[1, 2, 3]', '"just a string"'])(
      'answers exactly %j as one delta',
      (json) => {
        const { parts } = plan(user(`/json ${json}`));
        expect(deltasOf(parts, 'text-delta')).toEqual([json]);
        expect(finishReason(parts)).toBe('stop');
      },
    );
  });

  describe('/bench', () => {
    it('streams n deltas of "x " with no delay', () => {
      const script = plan(user('/bench 50'));
      const deltas = deltasOf(script.parts, 'text-delta');
      expect(deltas).toHaveLength(50);
      expect(new Set(deltas)).toEqual(new Set(['x ']));
      expect(script.delayMs).toBe(0);
      expect(finishReason(script.parts)).toBe('stop');
    });

    it.each(['/bench', '/bench 0', '/bench -3', '/bench lots'])('%j streams one delta', (text) => {
      expect(deltasOf(plan(user(text)).parts, 'text-delta')).toEqual(['x ']);
    });

    it('"/bench <n> <first-ms> <gap-ms>" is paced like a remote model; bad timings are clamped or ignored', () => {
      expect(plan(user('/bench 5 300 20'))).toMatchObject({ delayMs: 20, firstDelayMs: 300 });
      expect(plan(user('/bench 5 300'))).toMatchObject({ delayMs: 0, firstDelayMs: 300 });
      expect(plan(user('/bench 5 999999 -1'))).toMatchObject({ delayMs: 0, firstDelayMs: 60_000 });
      expect(plan(user('/bench 5 soon')).firstDelayMs).toBeUndefined();
    });

    // Regression: `new Array(n)` with a fractional n throws RangeError: Invalid array length.
    it('a fractional count is rounded down instead of crashing the model', () => {
      expect(deltasOf(plan(user('/bench 2.5')).parts, 'text-delta')).toEqual(['x ', 'x ']);
    });
  });
});

describe('bounded answers', () => {
  it('maxOutputTokens stops the answer after that many deltas: text closed, finishReason length', () => {
    const { parts } = planScript([user('/bench 50')], { maxOutputTokens: 5 });
    expect(types(parts)).toEqual(['text-start', ...Array(5).fill('text-delta'), 'text-end', 'finish']);
    expect(finishReason(parts)).toBe('length');
    // An answer within the limit is left whole.
    expectTextAnswer(
      planScript([user('hello big world')], { maxOutputTokens: 5 }).parts,
      'You said: hello big world',
    );
  });

  it('reasoning deltas count too: a cut inside the reasoning closes it and says no more', () => {
    const { parts } = planScript([user('/reason why is the sky blue')], { maxOutputTokens: 2 });
    expect(types(parts)).toEqual([
      'reasoning-start',
      'reasoning-delta',
      'reasoning-delta',
      'reasoning-end',
      'finish',
    ]);
    expect(finishReason(parts)).toBe('length');
  });

  it(`no answer has more than MAX_DELTAS (${MAX_DELTAS}) deltas: a larger /bench is cut with length`, () => {
    const { parts } = planScript([user('/bench 1000000')]);
    expect(deltasOf(parts, 'text-delta')).toHaveLength(MAX_DELTAS);
    expect(finishReason(parts)).toBe('length');
    const asked = planScript([user('/bench 1000000')], { maxOutputTokens: 10_000_000 });
    expect(deltasOf(asked.parts, 'text-delta')).toHaveLength(MAX_DELTAS);
  });
});

describe('ScriptedModel', () => {
  const options = (text: string, abortSignal?: AbortSignal) => ({ prompt: [user(text)], abortSignal }) as any;

  it('is a v3 provider model named scripted', () => {
    const model = new ScriptedModel();
    expect([model.specificationVersion, model.provider, model.modelId]).toEqual([
      'v3',
      'io-bridge',
      'scripted',
    ]);
  });

  it('streams stream-start and then the script', async () => {
    const { stream } = await new ScriptedModel().doStream(options('hi there'));
    const parts = await readAll(stream);
    expect(parts[0]).toEqual({ type: 'stream-start', warnings: [] });
    expect(parts.slice(1)).toEqual(planScript([user('hi there')]).parts);
  });

  it('a script without delay streams everything without waits', async () => {
    const { stream } = await new ScriptedModel().doStream(options('/bench 3'));
    expect(types(await readAll(stream))).toEqual([
      'stream-start',
      'text-start',
      'text-delta',
      'text-delta',
      'text-delta',
      'text-end',
      'finish',
    ]);
  });

  it('honours maxOutputTokens from the call options', async () => {
    const { stream } = await new ScriptedModel().doStream({ ...options('/bench 100'), maxOutputTokens: 3 });
    const parts = await readAll(stream);
    expect(textOf(parts)).toBe('x x x ');
    expect(finishReason(parts)).toBe('length');
  });

  it('a long script without delay yields to the event loop while it streams', async () => {
    const { stream } = await new ScriptedModel().doStream(options('/bench 20000'));
    let read = 0;
    let readWhenImmediateRan: number | undefined;
    setImmediate(() => (readWhenImmediateRan = read));
    const reader = stream.getReader();
    while (!(await reader.read()).done) read++;
    expect(read).toBe(20_000 + 4);
    // Run to the end on microtasks alone, the stream would let the immediate run only after it.
    expect(readWhenImmediateRan).toBeGreaterThan(0);
    expect(readWhenImmediateRan).toBeLessThanOrEqual(PARTS_PER_TURN);
  });

  it('an abort stops a long script without delay', async () => {
    const controller = new AbortController();
    const { stream } = await new ScriptedModel().doStream(options('/bench 20000', controller.signal));
    const reader = stream.getReader();
    let read = 0;
    const drained = (async () => {
      while (!(await reader.read()).done) if (++read === 10) controller.abort(new Error('client gone'));
    })();
    await expect(drained).rejects.toThrow('client gone');
    expect(read).toBeLessThanOrEqual(PARTS_PER_TURN);
  });

  it('/slow waits between deltas', async () => {
    const started = Date.now();
    const { stream } = await new ScriptedModel().doStream(options('/slow 30 a b'));
    const parts = await readAll(stream);
    expect(textOf(parts)).toBe('You said: a b');
    // Four deltas, each after a 30 ms wait; timers may fire a little early, hence the margin.
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('"/bench 3 300 20" waits 300 ms for its first delta, then 20 ms before each next one', async () => {
    jest.useFakeTimers();
    try {
      const { stream } = await new ScriptedModel().doStream(options('/bench 3 300 20'));
      const reader = stream.getReader();
      await reader.read(); // stream-start
      await reader.read(); // text-start
      let deltas = 0;
      const counting = (async () => {
        while (!(await reader.read()).done) deltas++;
      })();
      await jest.advanceTimersByTimeAsync(299);
      expect(deltas).toBe(0);
      await jest.advanceTimersByTimeAsync(1);
      expect(deltas).toBe(1);
      await jest.advanceTimersByTimeAsync(19);
      expect(deltas).toBe(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(deltas).toBe(2);
      await jest.advanceTimersByTimeAsync(20);
      await counting;
      expect(deltas).toBe(3 + 2); // text-end and finish follow the last delta at once
    } finally {
      jest.useRealTimers();
    }
  });

  it('an abort stops a slow stream with the abort reason', async () => {
    const controller = new AbortController();
    const { stream } = await new ScriptedModel().doStream(
      options('/slow 5000 never finished', controller.signal),
    );
    const reader = stream.getReader();
    expect((await reader.read()).value).toEqual({ type: 'stream-start', warnings: [] });
    expect((await reader.read()).value).toEqual({ type: 'text-start', id: 't' });
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('stop now')), 20);
    await expect(reader.read()).rejects.toThrow('stop now');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('only streams', async () => {
    await expect(new ScriptedModel().doGenerate()).rejects.toThrow('The scripted model only streams');
  });
});

describe('content parts (AG-UI 1.0 images and documents)', () => {
  const withFiles: Message = {
    role: 'user',
    content: [
      { type: 'text', text: 'look' },
      { type: 'file', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
      {
        type: 'file',
        mediaType: 'application/pdf',
        data: new URL('https://example.com/a.pdf'),
        filename: 'a.pdf',
      },
    ],
  };

  it('says which files it received with the text', () => {
    expectTextAnswer(
      plan(withFiles).parts,
      'You said: look [with file image/png 8 bytes; file application/pdf https://example.com/a.pdf a.pdf]',
    );
  });

  it('describes them in /history', () => {
    const history: Message = { role: 'user', content: [{ type: 'text', text: '/history' }] };
    expect(textOf(plan(withFiles, history).parts)).toBe(
      'user: look [file image/png 8 bytes] [file application/pdf https://example.com/a.pdf a.pdf]\nuser: /history',
    );
  });

  it('takes URLs as they are (no download before the call)', () => {
    const urls = new ScriptedModel().supportedUrls['*/*'];
    expect(urls.some((re) => re.test('https://example.com/x.png'))).toBe(true);
  });
});

describe('tool names the model knows by an alias', () => {
  it('calls the alias of a name it was not offered as it is', () => {
    const alias = modelToolName('portal.get_positions');
    const call = (offered?: Set<string>) =>
      planScript([user('/tool portal.get_positions {}')], {}, offered).parts.find(
        (p) => p.type === 'tool-call',
      );
    expect(call(new Set(['files_read', alias]))).toMatchObject({ toolName: alias });
    expect(call(new Set(['portal.get_positions', alias]))).toMatchObject({
      toolName: 'portal.get_positions',
    });
    expect(call()).toMatchObject({ toolName: 'portal.get_positions' });
  });
});
