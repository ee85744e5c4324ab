import { boundedCall, cutResult, RunCaller } from './run-tools';

describe('a run caller, as forwardAuth tells a server who calls', () => {
  const caller = new RunCaller('alice', { email: 'alice@example.com', roles: ['x'] }, 'tok-123');

  it("sends the caller's bearer token, and nothing without one", () => {
    expect(caller.identityFor('bearer')).toEqual({ header: 'authorization', value: 'Bearer tok-123' });
    expect(new RunCaller('bob', {}).identityFor('bearer')).toBeUndefined();
  });

  it('builds a header from the principal, and none when a claim it names is missing or not text', () => {
    expect(caller.identityFor({ header: 'X-User', value: '{resourceId} <{claims.email}>' })).toEqual({
      header: 'X-User',
      value: 'alice <alice@example.com>',
    });
    expect(caller.identityFor({ header: 'X-User', value: '{claims.missing}' })).toBeUndefined();
    expect(caller.identityFor({ header: 'X-User', value: '{claims.roles}' })).toBeUndefined();
  });

  it('never shows its token when serialized or inspected', () => {
    expect(JSON.stringify({ caller })).toBe('{"caller":{"resourceId":"alice"}}');
    expect(Object.values(caller)).not.toContain('tok-123');
  });
});

describe('a server tool call within its limits', () => {
  it('cuts a result longer than the limit and says so, keeping a short one as it is', () => {
    expect(cutResult({ a: 1 }, 100)).toEqual({ a: 1 });
    const cut = cutResult('é'.repeat(100), 51) as string;
    expect(cut.startsWith('é'.repeat(25))).toBe(true);
    expect(cut).not.toContain('\uFFFD');
    expect(cut).toContain('[cut: the result was 200 bytes; its first 51 are above (MAX_TOOL_RESULT_BYTES)]');
    expect(cutResult('x'.repeat(1000), 0)).toHaveLength(1000);
  });

  it('ends a call past the timeout with an error, its signal aborted', async () => {
    jest.useFakeTimers();
    try {
      let seen: AbortSignal | undefined;
      const call = boundedCall('slow', { timeoutMs: 1000, maxResultBytes: 0 }, undefined, (signal) => {
        seen = signal;
        return new Promise(() => undefined);
      });
      jest.advanceTimersByTime(1000);
      await expect(call).rejects.toThrow('Tool slow did not answer within 1000 ms (TOOL_TIMEOUT_MS)');
      expect(seen?.aborted).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('passes the run signal on: a stopped run stops its call', async () => {
    const run = new AbortController();
    let seen: AbortSignal | undefined;
    const result = await boundedCall(
      'quick',
      { timeoutMs: 1000, maxResultBytes: 0 },
      run.signal,
      (signal) => {
        seen = signal;
        return Promise.resolve('ok');
      },
    );
    expect(result).toBe('ok');
    run.abort();
    expect(seen?.aborted).toBe(true);
  });
});
