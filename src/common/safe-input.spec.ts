import { MAX_JSON_DEPTH, unsafeInput } from './safe-input';

const nest = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

describe('unsafeInput', () => {
  it.each([
    ['plain JSON', { a: [1, 'two', { three: null, four: true }] }],
    ['an emoji (a paired surrogate)', { '😀': 'x😀y' }],
    ['control characters other than NUL', { a: '\t\n\u0001' }],
    ['nesting exactly at the bound', nest(MAX_JSON_DEPTH - 1)],
  ])('accepts %s', (_name, value) => {
    expect(unsafeInput(value)).toBeUndefined();
  });

  it.each([
    ['NUL in a value', { a: { b: 'x\u0000' } }, 'a.b'],
    ['NUL in a key', { a: { 'k\u0000': 1 } }, 'a'],
    ['a lone high surrogate', ['ok', '\ud800x'], '1'],
    ['a lone low surrogate', { s: 'x\udc00' }, 's'],
    ['a reversed pair', { s: '\ude00\ud83d' }, 's'],
    ['nesting past the bound', { n: nest(MAX_JSON_DEPTH) }, 'n' + '.0'.repeat(MAX_JSON_DEPTH - 1)],
  ])('refuses %s, naming where', (_name, value, path) => {
    expect(unsafeInput(value)?.path).toBe(path);
  });

  it('walks 1,000,000 levels without overflowing the stack', () => {
    let v: unknown = 'x';
    for (let i = 0; i < 1_000_000; i++) v = { v };
    expect(unsafeInput(v)?.message).toMatch(/nesting deeper/);
  });

  it('names a query or parameter by its own name', () => {
    expect(unsafeInput('a\u0000', MAX_JSON_DEPTH, 'threadId')).toEqual({
      path: 'threadId',
      message: 'must not contain NUL characters or unpaired surrogates',
    });
  });
});
