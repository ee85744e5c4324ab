import { isId } from './ids';

describe('ids and owners', () => {
  it.each([
    ['an SSO username', 'josé.martín@corp.example'],
    ['spaces inside', 'Ana María'],
    ['CJK', '田中太郎'],
    ['200 ASCII characters', 'a'.repeat(200)],
    ['200 astral characters (400 UTF-16 units), counted as code points', '🙂'.repeat(200)],
    ['printable ASCII punctuation', 'a/b?c#d%e+f'],
  ])('accepts %s', (_, id) => {
    expect(isId(id)).toBe(true);
  });

  it.each([
    ['empty', ''],
    ['only whitespace', ' \u00a0\u3000'],
    ['a C0 control', 'a\u0001b'],
    ['a line feed', 'a\nb'],
    ['a tab', 'a\tb'],
    ['DEL', 'a\u007f'],
    ['a C1 control', 'a\u0085b'],
    ['201 characters', 'a'.repeat(201)],
    ['201 astral characters', '🙂'.repeat(201)],
    ['not a string', 42],
  ])('refuses %s', (_, id) => {
    expect(isId(id)).toBe(false);
  });
});
