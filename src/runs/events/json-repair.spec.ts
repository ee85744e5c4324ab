import fc from 'fast-check';
import { repairJsonObject } from './json-repair';

const parsed = (text: string | undefined): unknown => (text === undefined ? undefined : JSON.parse(text));
/** What a value is once it has been through JSON (-0 becomes 0). */
const viaJson = (v: unknown): unknown => JSON.parse(JSON.stringify(v));
const isPlainObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON object keys without `__proto__`, whose JSON.parse and Object.fromEntries semantics differ. */
const key = fc.string({ maxLength: 6 }).filter((k) => k !== '__proto__');
const jsonObject = fc.dictionary(key, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });

describe('repairJsonObject', () => {
  describe('a complete JSON object', () => {
    it.each(['{}', '{"a":1}', '{"a":{"b":[1,"x",null,true]}}', '{ "spaced" : [ 1 , 2 ] }'])(
      'returns %s unchanged',
      (text) => {
        expect(repairJsonObject(text)).toBe(text);
      },
    );

    it('returns the object without its surrounding whitespace', () => {
      expect(repairJsonObject('  \n{"a":1}\t ')).toBe('{"a":1}');
    });
  });

  describe('text that is not a JSON object', () => {
    it.each(['', '   ', '[1,2]', '[', '1', '"text"', 'null', 'true', 'not json', '}{', ']'])(
      '%j is not repaired',
      (text) => {
        expect(repairJsonObject(text)).toBeUndefined();
      },
    );
  });

  describe('a truncated object (a model cut off mid-arguments)', () => {
    it.each([
      ['{', '{}', {}],
      ['{"a":1,', '{"a":1}', { a: 1 }],
      ['{"a":1 , ', '{"a":1 }', { a: 1 }],
      ['{"a":', '{"a":null}', { a: null }],
      ['{"a":"hel', '{"a":"hel"}', { a: 'hel' }],
      ['{"a":"x,', '{"a":"x,"}', { a: 'x,' }],
      ['{"a":"x:', '{"a":"x:"}', { a: 'x:' }],
      ['{"a":[1,2', '{"a":[1,2]}', { a: [1, 2] }],
      ['{"a":[1,2,', '{"a":[1,2]}', { a: [1, 2] }],
      ['{"a":[', '{"a":[]}', { a: [] }],
      ['{"a":{"b":[{"c":"d', '{"a":{"b":[{"c":"d"}]}}', { a: { b: [{ c: 'd' }] } }],
      ['{"a":"{[(', '{"a":"{[("}', { a: '{[(' }],
      ['{"a":"say \\"hi', '{"a":"say \\"hi"}', { a: 'say "hi' }],
      ['{"a":"x\\', '{"a":"x\\\\"}', { a: 'x\\' }],
      ['{"a":12', '{"a":12}', { a: 12 }],
    ])('%j becomes %j', (text, expected, value) => {
      const repaired = repairJsonObject(text);
      expect(repaired).toBe(expected);
      expect(parsed(repaired)).toEqual(value);
    });
  });

  describe('text that cannot be repaired', () => {
    it.each([
      '{"a":1}}',
      '{"a":1]',
      '{"a":[1}',
      '{"a":1} trailing',
      '{"a":1}{"b":2}',
      '{"a":[1,]',
      '{"a":tr',
      '{"a"',
      '{"a":1,"b',
      '{a:1}',
    ])('%j is left alone (undefined)', (text) => {
      expect(repairJsonObject(text)).toBeUndefined();
    });
  });

  describe('properties', () => {
    it('returns every serialized JSON object unchanged, compact or indented', () => {
      fc.assert(
        fc.property(jsonObject, (value) => {
          const compact = JSON.stringify(value);
          const indented = JSON.stringify(value, null, 2);
          expect(repairJsonObject(compact)).toBe(compact);
          expect(repairJsonObject(indented)).toBe(indented);
        }),
        { numRuns: 300 },
      );
    });

    it('never throws, and whatever it returns parses to a plain object', () => {
      const fragments = fc.constantFrom(
        '{',
        '}',
        '[',
        ']',
        '"',
        '\\',
        ',',
        ':',
        'a',
        '1',
        ' ',
        'null',
        '"k":',
      );
      const text = fc.oneof(
        fc.string(),
        fc.array(fragments, { maxLength: 20 }).map((parts) => parts.join('')),
      );
      fc.assert(
        fc.property(text, (input) => {
          const repaired = repairJsonObject(input);
          if (repaired !== undefined) expect(isPlainObject(JSON.parse(repaired))).toBe(true);
        }),
        { numRuns: 1000 },
      );
    });

    it('any prefix of a serialized object is repaired to a plain object or refused, never to something else', () => {
      fc.assert(
        fc.property(jsonObject, fc.nat(), (value, cut) => {
          const text = JSON.stringify(value);
          const repaired = repairJsonObject(text.slice(0, cut % (text.length + 1)));
          if (repaired !== undefined) expect(isPlainObject(JSON.parse(repaired))).toBe(true);
        }),
        { numRuns: 500 },
      );
    });

    it('an object cut after its k-th member keeps exactly those members', () => {
      fc.assert(
        fc.property(jsonObject, fc.nat(), fc.boolean(), (value, k, withComma) => {
          const members = Object.entries(value).map(
            ([name, v]) => `${JSON.stringify(name)}:${JSON.stringify(v)}`,
          );
          const kept = k % (members.length + 1);
          const text = `{${members.slice(0, kept).join(',')}${withComma && kept > 0 ? ',' : ''}`;
          expect(parsed(repairJsonObject(text))).toEqual(
            viaJson(Object.fromEntries(Object.entries(value).slice(0, kept))),
          );
        }),
        { numRuns: 300 },
      );
    });

    it('an object cut after a member name and its colon gets that member as null', () => {
      fc.assert(
        fc.property(jsonObject, key, (value, name) => {
          const rest = Object.fromEntries(Object.entries(value).filter(([k]) => k !== name));
          const body = JSON.stringify(rest).slice(0, -1);
          const text = `${body}${body === '{' ? '' : ','}${JSON.stringify(name)}:`;
          expect(parsed(repairJsonObject(text))).toEqual(viaJson({ ...rest, [name]: null }));
        }),
        { numRuns: 300 },
      );
    });

    it('an object cut inside a string value keeps the part of the string it has', () => {
      fc.assert(
        fc.property(key, fc.string({ maxLength: 20 }), fc.nat(), (name, text, cut) => {
          const prefix = text.slice(0, cut % (text.length + 1));
          // The input is trimmed first, so whitespace the cut leaves at the very end is not kept.
          fc.pre(prefix.trimEnd() === prefix);
          // The prefix as JSON string text, its closing quote dropped; a cut escape is not a case here.
          const open = JSON.stringify(prefix).slice(0, -1);
          expect(parsed(repairJsonObject(`{${JSON.stringify(name)}:${open}`))).toEqual({ [name]: prefix });
        }),
        { numRuns: 300 },
      );
    });
  });
});
