import { DomainError } from '../../common/errors';
import { parseForwardedProps } from './forwarded-props';

const ceilings = {
  maxTokens: 1000,
  maxSteps: 8,
  maxRetries: 3,
  maxLastMessages: 50,
  maxDisconnectGraceMs: 60_000,
};
const parse = (props?: Record<string, unknown>) => parseForwardedProps(props, ceilings);

function problems(props: Record<string, unknown>): string[] {
  try {
    parse(props);
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('VALIDATION_FAILED');
    return ((err as DomainError).details ?? []).map((d) => d.path ?? '');
  }
  throw new Error('expected a VALIDATION_FAILED error');
}

describe('parseForwardedProps', () => {
  it('gives defaults for nothing', () => {
    expect(parse(undefined)).toEqual({
      modelSettings: {},
      readOnly: false,
      generateTitle: false,
      namesMemory: false,
      ifBusy: 'reject',
      extras: {},
    });
  });

  it('reads ifBusy: reject (the default), enqueue or interrupt; anything else is a 400 naming it', () => {
    for (const ifBusy of ['reject', 'enqueue', 'interrupt']) expect(parse({ ifBusy }).ifBusy).toBe(ifBusy);
    expect(parse({ ifBusy: null }).ifBusy).toBe('reject');
    for (const ifBusy of ['queue', 'REJECT', '', 1, true, {}]) {
      expect(problems({ ifBusy })).toEqual(['forwardedProps.ifBusy']);
    }
  });

  it('says the request names memory when memory.thread, memoryOptions or memory.options is there', () => {
    const names = (props: Record<string, unknown>) => parseForwardedProps(props, ceilings, 't1').namesMemory;
    expect(names({ memory: { thread: 't1', resource: 'r' } })).toBe(true);
    expect(names({ memory: { thread: { id: 't1', title: 'x' } } })).toBe(true);
    expect(names({ memoryOptions: {} })).toBe(true);
    expect(names({ memory: { options: { lastMessages: 3 } } })).toBe(true);
    expect(names({})).toBe(false);
    expect(names({ memory: { resource: 'r' } })).toBe(false);
    expect(names({ memory: {}, memoryOptions: null, agentId: 'a' })).toBe(false);
  });

  it('reads disconnectGraceMs as an integer, clamped to 0 and the ceiling', () => {
    expect(parse({ disconnectGraceMs: 5000 }).disconnectGraceMs).toBe(5000);
    expect(parse({ disconnectGraceMs: 10_000_000 }).disconnectGraceMs).toBe(60_000);
    expect(parse({ disconnectGraceMs: -5 }).disconnectGraceMs).toBe(0);
    expect(parse({}).disconnectGraceMs).toBeUndefined();
    expect(parse({ disconnectGraceMs: 5000 }).extras).toEqual({});
    expect(problems({ disconnectGraceMs: '5000' })).toEqual(['forwardedProps.disconnectGraceMs']);
    expect(problems({ disconnectGraceMs: 1.5 })).toEqual(['forwardedProps.disconnectGraceMs']);
  });

  it('refuses a memory.thread that is not the run threadId', () => {
    const refused = (props: Record<string, unknown>) => {
      try {
        parseForwardedProps(props, ceilings, 't1');
      } catch (err) {
        return (err as DomainError).details;
      }
      return undefined;
    };
    expect(refused({ memory: { thread: 't2' } })).toEqual([
      { path: 'forwardedProps.memory.thread', message: 'must equal threadId' },
    ]);
    expect(refused({ memory: { thread: { id: 't2' } } })).toEqual([
      { path: 'forwardedProps.memory.thread', message: 'must equal threadId' },
    ]);
    expect(refused({ memory: { thread: 7 } })).toEqual([
      { path: 'forwardedProps.memory.thread', message: 'must be a string (a thread id)' },
    ]);
    expect(refused({ memory: { thread: 't1' } })).toBeUndefined();
  });

  it('maps modelSettings to the model call, clamping each to its range and ceiling', () => {
    expect(
      parse({
        modelSettings: { maxTokens: 5000, temperature: -1, topP: 3, topK: 0, maxRetries: 10, maxSteps: 100 },
      }),
    ).toMatchObject({
      modelSettings: { maxOutputTokens: 1000, temperature: 0, topP: 1, topK: 1, maxRetries: 3 },
      maxSteps: 8,
    });
    expect(
      parse({ modelSettings: { maxTokens: 10, temperature: 0.7, topP: 0.9, topK: 5 } }).modelSettings,
    ).toEqual({
      maxOutputTokens: 10,
      temperature: 0.7,
      topP: 0.9,
      topK: 5,
    });
  });

  it('refuses known keys of the wrong type, naming each', () => {
    expect(
      problems({
        agentId: 3,
        modelSettings: { temperature: 'hot', maxTokens: 1.5, topK: Number.NaN },
        memoryOptions: { readOnly: 'yes', lastMessages: '5' },
      }),
    ).toEqual([
      'forwardedProps.agentId',
      'forwardedProps.modelSettings.maxTokens',
      'forwardedProps.modelSettings.temperature',
      'forwardedProps.modelSettings.topK',
      'forwardedProps.memoryOptions.lastMessages',
      'forwardedProps.memoryOptions.readOnly',
    ]);
    expect(problems({ modelSettings: [] })).toEqual(['forwardedProps.modelSettings']);
    expect(problems({ structuredOutput: { schema: { type: 12 } } })).toEqual([
      'forwardedProps.structuredOutput.schema',
    ]);
    expect(problems({ structuredOutput: { schema: '{"type":' } })).toEqual([
      'forwardedProps.structuredOutput.schema',
    ]);
    expect(problems({ structuredOutput: { schema: '"text"' } })).toEqual([
      'forwardedProps.structuredOutput.schema',
    ]);
  });

  it('ignores a structuredOutput without a schema, as io.Assist sends on plain requests', () => {
    for (const structuredOutput of [{}, { schema: undefined }, { schema: null }, null]) {
      expect(parse({ structuredOutput })).not.toHaveProperty('structuredOutput');
    }
  });

  it('parses a schema sent as JSON text', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] };
    expect(parse({ structuredOutput: { schema: JSON.stringify(schema) } }).structuredOutput).toEqual({
      schema,
    });
  });

  it('reads memoryOptions and io.Assist memory.options, memoryOptions winning', () => {
    expect(
      parse({ memoryOptions: { lastMessages: 500, readOnly: true, generateTitle: true } }),
    ).toMatchObject({
      lastMessages: 50,
      readOnly: true,
      generateTitle: true,
    });
    expect(
      parse({ memory: { thread: 't', resource: 'r', options: { lastMessages: 3, readOnly: true } } }),
    ).toMatchObject({
      lastMessages: 3,
      readOnly: true,
    });
    expect(
      parse({ memory: { options: { lastMessages: 3 } }, memoryOptions: { lastMessages: 4 } }).lastMessages,
    ).toBe(4);
    expect(parse({ memoryOptions: { lastMessages: 0 } }).lastMessages).toBe(0);
  });

  it('keeps a valid structuredOutput schema', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } } };
    expect(parse({ structuredOutput: { schema } }).structuredOutput).toEqual({ schema });
  });

  it('passes unknown keys on as extras, and keeps the known ones out of them', () => {
    expect(
      parse({ agentId: 'a', resourceId: 'r', theme: 'dark', nested: { x: [1] }, memory: {} }).extras,
    ).toEqual({
      theme: 'dark',
      nested: { x: [1] },
    });
  });
});
