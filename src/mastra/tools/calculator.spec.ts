import { evaluate, ExpressionError } from './calculator';

describe('calculator', () => {
  it.each([
    ['1 + 2', 3],
    ['2 + 3 * 4', 14],
    ['(2 + 3) * 4', 20],
    ['2 ^ 3 ^ 2', 512],
    ['2 ** 10', 1024],
    ['-3 + 5', 2],
    ['-(2 + 3)', -5],
    ['10 % 4', 2],
    ['7 / 2', 3.5],
    ['sqrt(16) + abs(-2)', 6],
    ['max(1, 5, 3) - min(4, 2)', 3],
    ['round(2.5) + floor(2.7) + ceil(2.1)', 3 + 2 + 3],
    ['1.5e3', 1500],
    ['.5 * 4', 2],
    ['-2 ^ 2', -4],
  ])('%s = %d', (expression, expected) => {
    expect(evaluate(expression)).toBeCloseTo(expected, 10);
  });

  it('knows pi and e', () => {
    expect(evaluate('pi')).toBe(Math.PI);
    expect(evaluate('e')).toBe(Math.E);
  });

  it.each([
    ['', 'Unexpected end of expression'],
    ['1 +', 'Unexpected end of expression'],
    ['(1 + 2', "Expected ')'"],
    ['1 2', "Unexpected '2'"],
    ['process(1)', "Unknown name 'process'"],
    ['process.exit(1)', 'Unexpected character at position 8'],
    ['toString(1)', "Unknown name 'toString'"],
    ['constructor', "Unknown name 'constructor'"],
    ['1 / 0', 'The result is not a finite number'],
    ['2 $ 3', 'Unexpected character at position 3'],
    ['x'.repeat(1001), 'Expression too long'],
    ['('.repeat(101) + '1' + ')'.repeat(101), 'Too deeply nested'],
  ])('refuses %j', (expression, message) => {
    expect(() => evaluate(expression)).toThrow(new ExpressionError(message));
  });
});
