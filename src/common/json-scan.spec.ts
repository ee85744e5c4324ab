import fc from 'fast-check';
import {
  BodyLimits,
  bodyLimitError,
  forwardedPropsLimitError,
  RunBodyLimits,
  runBodyLimitError,
} from './body-limits';
import { DomainError } from './errors';
import { JsonLimitScan, scanJson, ScanVerdict } from './json-scan';
import { TurnShare } from './turn-share';

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const HUGE: BodyLimits = { maxDepth: 1e6, maxValues: 1e9, maxStringLength: 1e9 };
const HUGE_RUN: RunBodyLimits = {
  maxMessages: 1e9,
  maxTools: 1e9,
  maxContext: 1e9,
  maxContentParts: 1e9,
  maxForwardedPropsKeys: 1e9,
};

/** Counts the turns of the event loop from now until the returned function is called, which returns the count. */
function countTurns(): () => number {
  let turns = 0;
  let counting = true;
  const count = () => {
    turns++;
    if (counting) setImmediate(count);
  };
  setImmediate(count);
  return () => {
    counting = false;
    return turns;
  };
}
/** The verdict of one scan of the whole text. */
function scan(text: string, limits = HUGE, run?: RunBodyLimits): ScanVerdict {
  const s = new JsonLimitScan(text, limits, run);
  s.step(Infinity);
  return s.verdict();
}

/** What the checks of the parsed body say (app.factory.ts before the scan): the scan's oracle. */
function checked(body: unknown, limits: BodyLimits, run?: RunBodyLimits): DomainError | undefined {
  return (
    (run ? runBodyLimitError(body, run) : undefined) ??
    bodyLimitError(body, limits) ??
    (run ? forwardedPropsLimitError(body, run) : undefined)
  );
}

const refusal = (v: ScanVerdict) =>
  v.ok ? 'ok' : 'invalid' in v ? 'not JSON' : { status: v.error.status, code: v.error.code };
const detail = (v: ScanVerdict) => (!v.ok && 'error' in v ? v.error.details?.[0] : undefined);

const parses = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

describe('JsonLimitScan', () => {
  describe('JSON or not, as JSON.parse says', () => {
    it.each([
      '0',
      '-0.5e+3',
      '"a\\u00e9\\n\\"b\\\\"',
      ' {"a": [1, true, false, null, {}, []], "b": {"c": "d"}}\n',
      '[[[[]]]]',
      '"\u{1f600}"',
    ])('%j is JSON', (text) => {
      expect(scan(text)).toEqual({ ok: true });
    });

    it.each([
      '',
      ' ',
      '{',
      '[1,]',
      '{"a":1,}',
      '01',
      '1.',
      '.5',
      '-',
      '+1',
      '"\\u12"',
      '"\\x"',
      '"a\nb"',
      '"\t"',
      'tru',
      'nul',
      '[1 2]',
      '{"a" 1}',
      '{1:2}',
      '{"a":1 "b":2}',
      '{} x',
      ']',
      '[}',
      '{]',
      '"unterminated',
      "'a'",
      'NaN',
    ])('%j is not JSON', (text) => {
      expect(parses(text)).toBe(false);
      expect(scan(text)).toEqual({ ok: false, invalid: true });
    });

    it('a leading byte order mark is taken, as the body parser takes it', () => {
      expect(scan('\ufeff{"a":1}')).toEqual({ ok: true });
    });

    it('agrees with JSON.parse on any text of JSON characters (property)', () => {
      const char = fc.constantFrom(
        ...'{}[],:"\\u0123456789-+.eEtrufalsn \n\tabAF'.split(''),
        '\u0001',
        '\ud800',
      );
      fc.assert(
        fc.property(fc.array(char, { maxLength: 40 }), (chars) => {
          const text = chars.join('');
          expect(refusal(scan(text))).toBe(parses(text) ? 'ok' : 'not JSON');
        }),
        { numRuns: 5000 },
      );
    });

    it('any JSON value, however printed, is JSON (property)', () => {
      fc.assert(
        fc.property(fc.jsonValue(), fc.boolean(), (value, pretty) => {
          expect(scan(JSON.stringify(value, null, pretty ? 2 : undefined))).toEqual({ ok: true });
        }),
      );
    });
  });

  describe('the limits, as the checks of the parsed body name them', () => {
    const limits: BodyLimits = { maxDepth: 12, maxValues: 2000, maxStringLength: 5000 };
    const run: RunBodyLimits = {
      maxMessages: 1000,
      maxTools: 128,
      maxContext: 128,
      maxContentParts: 8,
      maxForwardedPropsKeys: 50,
    };
    const input = (extra: Record<string, unknown>) => ({
      threadId: 't',
      runId: 'r',
      messages: [{ id: 'm', role: 'user', content: 'hi' }],
      tools: [],
      context: [],
      ...extra,
    });

    it.each([
      ['100,000 tools', { tools: range(100_000).map(() => ({})) }, 400, 'tools'],
      ['100,000 messages', { messages: range(100_000).map(() => ({ role: 'x' })) }, 400, 'messages'],
      ['100,000 context entries', { context: range(100_000).map(() => ({})) }, 400, 'context'],
      [
        'too many content parts',
        { messages: [{ id: 'm', role: 'user', content: range(9).map(() => ({ type: 'text', text: 'x' })) }] },
        400,
        'messages.0.content',
      ],
      [
        '100,000 forwardedProps keys',
        { forwardedProps: Object.fromEntries(range(100_000).map((i) => [`k${i}`, i])) },
        413,
        'forwardedProps',
      ],
      [
        'forwardedProps keys at any depth',
        { forwardedProps: { a: range(30).map((i) => ({ [`k${i}`]: i, [`j${i}`]: i })) } },
        413,
        'forwardedProps',
      ],
      ['too many values', { state: range(100_000) }, 413, 'state'],
      [
        'a long string',
        { messages: [{ id: 'm', role: 'user', content: 'x'.repeat(5001) }] },
        413,
        'messages.0.content',
      ],
      ['a long key', { state: { ['k'.repeat(5001)]: 1 } }, 413, 'state'],
      [
        'deep nesting',
        { state: range(13).reduce<unknown>((s) => ({ s }), 1) },
        400,
        'state.s.s.s.s.s.s.s.s.s.s.s',
      ],
    ])('%s: refused as the checks of the parsed body refuse it', (_name, extra, status, path) => {
      const body = input(extra);
      const verdict = scan(JSON.stringify(body), limits, run);
      const oracle = checked(body, limits, run)!;
      expect(refusal(verdict)).toEqual({ status, code: oracle.code });
      expect(oracle.status).toBe(status);
      expect(detail(verdict)?.path).toBe(path);
      expect(detail(verdict)?.path).toBe(oracle.details?.[0]?.path);
    });

    it('a list over its limit outranks the other limits; of several, the first in the text is named', () => {
      const body = { state: range(5000), tools: range(200), messages: range(2000).map(() => ({})) };
      const verdict = scan(JSON.stringify(body), limits, run);
      expect(detail(verdict)).toEqual({ path: 'tools', message: 'at most 128 tools per run' });
      // The checks named messages: the same status and code.
      expect(refusal(verdict)).toEqual({ status: 400, code: checked(body, limits, run)!.code });
    });

    it('text that is not JSON outranks the limits that are not 400', () => {
      const text = JSON.stringify({ state: range(5000) }).slice(0, -1);
      expect(scan(text, limits, run)).toEqual({ ok: false, invalid: true });
    });

    it('the scan stops at a list over its limit, the rest unread', () => {
      const text = JSON.stringify({ tools: range(200) }) + ' and then anything';
      const s = new JsonLimitScan(text, limits, run);
      s.step(Infinity);
      expect(s.done).toBe(true);
      expect(detail(s.verdict())?.path).toBe('tools');
    });

    it('keys are compared once decoded ("\\u0074ools" is tools)', () => {
      const text = `{"\\u0074ools":${JSON.stringify(range(200))}}`;
      expect(detail(scan(text, limits, run))?.path).toBe('tools');
    });

    it('lengths are counted once decoded (an escape is one character)', () => {
      const s = { maxDepth: 5, maxValues: 10, maxStringLength: 3 };
      expect(scan('"\\u00e9\\n\\\\"', s)).toEqual({ ok: true });
      expect(refusal(scan('"\\u00e9\\n\\\\a"', s))).toEqual({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    });

    it('without `run`, a body named like a RunAgentInput meets only the body limits', () => {
      expect(scan(JSON.stringify({ tools: range(200) }), limits)).toEqual({ ok: true });
    });

    const small = fc.record({
      maxDepth: fc.integer({ min: 1, max: 6 }),
      maxValues: fc.integer({ min: 1, max: 60 }),
      maxStringLength: fc.integer({ min: 0, max: 8 }),
    });
    const smallRun = fc.record({
      maxMessages: fc.integer({ min: 0, max: 4 }),
      maxTools: fc.integer({ min: 0, max: 4 }),
      maxContext: fc.integer({ min: 0, max: 4 }),
      maxContentParts: fc.integer({ min: 0, max: 4 }),
      maxForwardedPropsKeys: fc.integer({ min: 0, max: 6 }),
    });
    const value = fc.jsonValue({ maxDepth: 4 });
    const list = fc.array(value, { maxLength: 6 });
    const runBody = fc.record(
      {
        messages: fc.array(
          fc.oneof(fc.record({ role: value, content: fc.oneof(list, value) }, { requiredKeys: [] }), value),
          { maxLength: 6 },
        ),
        tools: list,
        context: list,
        forwardedProps: value,
        state: value,
      },
      { requiredKeys: [] },
    );

    it('accepts exactly what the checks of the parsed body accept (property)', () => {
      fc.assert(
        fc.property(fc.oneof(value, runBody), small, fc.option(smallRun), (body, bodyLimits, runLimits) => {
          const verdict = scan(JSON.stringify(body), bodyLimits, runLimits ?? undefined);
          const oracle = checked(body, bodyLimits, runLimits ?? undefined);
          expect(verdict.ok).toBe(oracle === undefined);
        }),
        { numRuns: 3000 },
      );
    });

    it('a body over one limit gets the refusal the checks give, status, code and all (property)', () => {
      // One limit small at a time: which of several a body crosses first may differ in order.
      const one = fc.oneof(
        small.map((s) => [{ ...HUGE, maxValues: s.maxValues }, undefined] as const),
        small.map((s) => [{ ...HUGE, maxStringLength: s.maxStringLength }, undefined] as const),
        small.map((s) => [{ ...HUGE, maxDepth: s.maxDepth }, undefined] as const),
        smallRun.map((r) => [HUGE, { ...HUGE_RUN, maxForwardedPropsKeys: r.maxForwardedPropsKeys }] as const),
        fc
          .tuple(fc.constantFrom('maxMessages', 'maxTools', 'maxContext', 'maxContentParts'), fc.nat(4))
          .map(([limit, max]) => [HUGE, { ...HUGE_RUN, [limit]: max }] as const),
      );
      fc.assert(
        fc.property(fc.oneof(value, runBody), one, (body, [bodyLimits, runLimits]) => {
          const verdict = scan(JSON.stringify(body), bodyLimits, runLimits);
          const oracle = checked(body, bodyLimits, runLimits);
          expect(refusal(verdict)).toEqual(oracle ? { status: oracle.status, code: oracle.code } : 'ok');
          // The checks counted an object's values and keys on reaching it (a look ahead); the scan meets
          // them in the text's order, so only those paths are the same.
          if (
            oracle &&
            bodyLimits.maxValues === HUGE.maxValues &&
            bodyLimits.maxStringLength === HUGE.maxStringLength
          ) {
            expect(detail(verdict)).toEqual(oracle.details?.[0]);
          }
        }),
        { numRuns: 3000 },
      );
    });
  });

  describe('scanJson: a slice at a time', () => {
    it('gives the verdict of one scan, whatever the slice (property)', async () => {
      const limits = { maxDepth: 4, maxValues: 30, maxStringLength: 6 };
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 5 }), fc.integer({ min: 1, max: 16 }), async (v, slice) => {
          const text = JSON.stringify(v);
          expect(await scanJson(text, limits, undefined, slice)).toEqual(scan(text, limits));
        }),
        { numRuns: 500 },
      );
    });

    it('a slice may end inside a string, between its escapes', async () => {
      const limits = { maxDepth: 4, maxValues: 30, maxStringLength: 40 };
      const text = JSON.stringify(['a\n"\\\u0001é'.repeat(5), { ['\t'.repeat(41)]: 1 }]);
      const whole = scan(text, limits);
      expect(detail(whole)).toEqual({ path: '1', message: 'a key is longer than 40 characters' });
      for (const slice of [1, 2, 3, 5, 8])
        expect(await scanJson(text, limits, undefined, slice)).toEqual(whole);
    });

    it('with a TurnShare, all scans together take its share of each turn', async () => {
      const share = new TurnShare(2);
      const texts = Array.from({ length: 3 }, () => JSON.stringify(range(3000)));
      const counted = countTurns();
      const verdicts = await Promise.all(texts.map((t) => scanJson(t, HUGE, undefined, 1024, share)));
      const turns = counted();
      expect(verdicts).toEqual(texts.map(() => ({ ok: true })));
      // Three texts of about 14 slices each, two slices a turn: about 21 turns, never fewer.
      const slices = texts.reduce((n, t) => n + Math.ceil(t.length / 1024), 0);
      expect(turns).toBeGreaterThanOrEqual(Math.floor(slices / 2) - 1);
    });

    it('with a TurnShare, a text shorter than a slice takes its share of a unit: a burst of small bodies is scanned in one turn', async () => {
      const share = new TurnShare(4);
      // 100 bodies of a run request (about 300 characters): under a unit in all, where a unit each took 25 turns.
      const texts = Array.from({ length: 100 }, (_, i) =>
        JSON.stringify({
          threadId: `t${i}`,
          messages: [{ id: `m${i}`, role: 'user', content: 'x'.repeat(200) }],
        }),
      );
      const counted = countTurns();
      const verdicts = await Promise.all(texts.map((t) => scanJson(t, HUGE, undefined, 32 * 1024, share)));
      expect(verdicts).toEqual(texts.map(() => ({ ok: true })));
      expect(counted()).toBeLessThanOrEqual(1);
    });

    it('lets the event loop turn between slices', async () => {
      const text = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => ({ i })));
      const counted = countTurns();
      const verdict = await scanJson(text, HUGE, undefined, 1024);
      const turns = counted();
      expect(verdict).toEqual({ ok: true });
      // About one turn per slice of 1,024 characters.
      expect(turns).toBeGreaterThan(text.length / 1024 / 2);
    });
  });
});
