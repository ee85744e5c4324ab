import { toStandardSchema } from '@mastra/core/schema';
import { jsonSchemaProblem, linearTimeSchema, re2Problem } from './json-schema';

const stringWith = (pattern: string) => ({
  type: 'object',
  properties: { s: { type: 'string', pattern } },
});
const validate = (schema: Record<string, unknown>, value: unknown) =>
  linearTimeSchema(schema)['~standard'].validate(value) as {
    value?: unknown;
    issues?: Array<{ message: string; path?: unknown[] }>;
  };

describe('jsonSchemaProblem', () => {
  it.each([
    ['an object schema', { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }],
    ['JavaScript pattern syntax RE2 shares', stringWith('^(?<year>\\d{4})-\\u0041\\/[^\\s]+$')],
    ['a catastrophic pattern (it runs in linear time)', stringWith('^(a+)+$')],
    ['patternProperties keys', { type: 'object', patternProperties: { '^x-[a-z]+$': { type: 'string' } } }],
    [
      'draft 2020-12',
      { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{}] },
    ],
    ['a pattern-like string in data keywords', { enum: [{ pattern: '(?=x)' }], default: { pattern: '\\1' } }],
  ])('accepts %s', (_, schema) => {
    expect(jsonSchemaProblem(schema)).toBeUndefined();
  });

  it.each([
    ['a backreference', stringWith('(a)\\1'), '/properties/s/pattern'],
    ['a lookahead', stringWith('^(?=a)'), '/properties/s/pattern'],
    ['a negative lookahead', stringWith('^(?!a)'), '/properties/s/pattern'],
    ['a lookbehind', stringWith('(?<=a)b'), '/properties/s/pattern'],
    ['a pattern in items', { type: 'array', items: { type: 'string', pattern: '(?=a)' } }, '/items/pattern'],
    [
      'a pattern in $defs, under a key with a slash',
      { $defs: { 'a/b': { pattern: '(?=a)' } } },
      '/$defs/a~1b/pattern',
    ],
    [
      'a patternProperties key',
      { type: 'object', patternProperties: { ok: {}, '(?!x)': {} } },
      '/patternProperties key "(?!x)"',
    ],
  ])('refuses %s, naming where it is', (_, schema, where) => {
    const problem = jsonSchemaProblem(schema);
    expect(problem?.split(': the pattern is not supported')[0]).toBe(where);
    expect(problem).toContain('RE2');
  });

  it('explains what RE2 refuses', () => {
    expect(re2Problem('(a)\\1')).toMatch(/invalid escape sequence/);
    expect(re2Problem('(?=a)')).toMatch(/unsupported Perl syntax/);
    expect(re2Problem('^a+$')).toBeUndefined();
  });

  it('refuses what is not a JSON Schema object, with Ajv saying where', () => {
    expect(jsonSchemaProblem({ type: 'object', properties: 5 })).toBe('/properties: must be object');
    expect(jsonSchemaProblem([])).toBe('must be a JSON Schema object');
    expect(jsonSchemaProblem('x')).toBe('must be a JSON Schema object');
    expect(jsonSchemaProblem({ $schema: 'http://json-schema.org/draft-04/schema#' })).toBe(
      'must be a draft-07 or 2020-12 JSON Schema',
    );
  });
});

describe('linearTimeSchema', () => {
  it('validates as Mastra does: the value when valid, issues with their paths when not', () => {
    const schema = stringWith('^a+$');
    expect(validate(schema, { s: 'aaa' })).toEqual({ value: { s: 'aaa' } });
    expect(validate(schema, { s: 'b' })).toEqual({
      issues: [{ message: 'must match pattern "^a+$"', path: ['s'] }],
    });
    expect(validate({ type: 'array', items: { type: 'number' } }, [1, 'x'])).toEqual({
      issues: [{ message: 'must be number', path: [1] }],
    });
  });

  it('shows the model the same JSON Schema as Mastra does for a plain one', () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^a$' } } } as const;
    const options = { target: 'draft-07' as const };
    expect(linearTimeSchema(schema)['~standard'].jsonSchema.input(options)).toEqual(
      toStandardSchema(schema)['~standard'].jsonSchema.input(options),
    );
  });

  const evil = `${'a'.repeat(27)}!`;
  it.each([
    ['pattern', stringWith('^(a+)+$'), { s: evil }, false],
    [
      'patternProperties key',
      { patternProperties: { '^(a+)+$': { type: 'number' } } },
      { [evil]: 'x' },
      true,
    ],
  ])(
    'matches a catastrophic %s in linear time (V8 backtracks for seconds here)',
    (_, schema, value, valid) => {
      const checked = linearTimeSchema(schema);
      void checked['~standard'].validate({}); // compiles
      const started = performance.now();
      const result = checked['~standard'].validate(value) as { issues?: unknown };
      expect(performance.now() - started).toBeLessThan(250);
      expect(result.issues === undefined).toBe(valid);
    },
  );

  it('gives each schema its own validator: two clients may use the same $id', () => {
    const first = { $id: 'https://example.com/same', type: 'string' };
    const second = { $id: 'https://example.com/same', type: 'number' };
    expect(validate(first, 'x')).toEqual({ value: 'x' });
    expect(validate(second, 1)).toEqual({ value: 1 });
  });

  it('uses the 2020-12 vocabulary when $schema says so', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'array',
      prefixItems: [{ type: 'number' }],
    };
    expect(validate(schema, ['x']).issues).toEqual([{ message: 'must be number', path: [0] }]);
  });

  it('reports a schema Ajv cannot compile as an issue, not a throw', () => {
    const issues = validate({ $ref: '#/definitions/missing' }, 1).issues;
    expect(issues).toEqual([{ message: expect.stringMatching(/^Schema validation error: /) }]);
  });
});
