/**
 * A small arithmetic parser (never `eval`): numbers, + - * / % ^, parentheses, unary minus, and the
 * functions sqrt, abs, round, floor, ceil, min, max. Precedence climbing over a token list.
 */
const FUNCTIONS = new Map<string, (...args: number[]) => number>([
  ['sqrt', Math.sqrt],
  ['abs', Math.abs],
  ['round', Math.round],
  ['floor', Math.floor],
  ['ceil', Math.ceil],
  ['min', Math.min],
  ['max', Math.max],
]);

export class ExpressionError extends Error {}

type Token = { kind: 'num'; value: number } | { kind: 'op'; value: string } | { kind: 'name'; value: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re = /\s*(?:(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)|([A-Za-z_]\w*)|(\*\*|[-+*/%^(),]))/y;
  let pos = 0;
  while (pos < text.length) {
    if (/^\s*$/.test(text.slice(pos))) break;
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) {
      const at = pos + (/^\s*/.exec(text.slice(pos))?.[0].length ?? 0);
      throw new ExpressionError(`Unexpected character at position ${at + 1}`);
    }
    pos = re.lastIndex;
    if (m[1] !== undefined) tokens.push({ kind: 'num', value: Number(m[1]) });
    else if (m[2] !== undefined) tokens.push({ kind: 'name', value: m[2] });
    else tokens.push({ kind: 'op', value: m[3] === '**' ? '^' : m[3] });
  }
  return tokens;
}

const BINARY: Record<string, { prec: number; right?: boolean; apply: (a: number, b: number) => number }> = {
  '+': { prec: 1, apply: (a, b) => a + b },
  '-': { prec: 1, apply: (a, b) => a - b },
  '*': { prec: 2, apply: (a, b) => a * b },
  '/': { prec: 2, apply: (a, b) => a / b },
  '%': { prec: 2, apply: (a, b) => a % b },
  '^': { prec: 4, right: true, apply: (a, b) => a ** b },
};

export function evaluate(expression: string): number {
  if (expression.length > 1000) throw new ExpressionError('Expression too long');
  const tokens = tokenize(expression);
  let i = 0;
  let depth = 0;
  const peek = () => tokens[i];
  const expectOp = (op: string) => {
    const t = tokens[i++];
    if (t?.kind !== 'op' || t.value !== op) throw new ExpressionError(`Expected '${op}'`);
  };

  const primary = (): number => {
    const t = tokens[i++];
    if (!t) throw new ExpressionError('Unexpected end of expression');
    if (t.kind === 'num') return t.value;
    if (t.kind === 'op' && t.value === '(') {
      if (++depth > 100) throw new ExpressionError('Too deeply nested');
      const v = expr(0);
      expectOp(')');
      depth--;
      return v;
    }
    if (t.kind === 'op' && (t.value === '-' || t.value === '+')) {
      const v = expr(3);
      return t.value === '-' ? -v : v;
    }
    if (t.kind === 'name') {
      if (t.value === 'pi') return Math.PI;
      if (t.value === 'e') return Math.E;
      const fn = FUNCTIONS.get(t.value);
      if (!fn) throw new ExpressionError(`Unknown name '${t.value}'`);
      expectOp('(');
      const args = [expr(0)];
      while (peek()?.kind === 'op' && peek().value === ',') {
        i++;
        args.push(expr(0));
      }
      expectOp(')');
      return fn(...args);
    }
    throw new ExpressionError(`Unexpected '${t.value}'`);
  };

  const expr = (minPrec: number): number => {
    let left = primary();
    for (;;) {
      const t = peek();
      const op = t?.kind === 'op' ? BINARY[t.value] : undefined;
      if (!op || op.prec < minPrec) return left;
      i++;
      left = op.apply(left, expr(op.right ? op.prec : op.prec + 1));
    }
  };

  const value = expr(0);
  if (i < tokens.length) throw new ExpressionError(`Unexpected '${String(tokens[i].value)}'`);
  if (!Number.isFinite(value)) throw new ExpressionError('The result is not a finite number');
  return value;
}
