import { classifyModelError, ModelFailure, modelFailureOf, retryAfterMs } from './model-errors';

/** What AI SDK's APICallError carries. */
const apiError = (statusCode: number, responseBody: string, responseHeaders: Record<string, string> = {}) =>
  Object.assign(new Error(`status ${statusCode}`), { statusCode, responseBody, responseHeaders });

describe('classifyModelError', () => {
  it('429 is MODEL_RATE_LIMITED, transient, with the wait the provider asked for', () => {
    const failure = classifyModelError(
      apiError(429, '{"error":{"message":"Rate limit reached"}}', { 'retry-after': '2' }),
    );
    expect(failure).toMatchObject({ code: 'MODEL_RATE_LIMITED', transient: true, retryAfterMs: 2000 });
    expect(failure.message).not.toMatch(/Rate limit reached/);
    expect(failure.detail).toMatch(/Rate limit reached/);
  });

  it('5xx and 408 are MODEL_UNAVAILABLE and transient; a context-length 400 is MODEL_CONTEXT_TOO_LONG and final', () => {
    expect(classifyModelError(apiError(503, 'overloaded'))).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      transient: true,
    });
    expect(classifyModelError(apiError(408, ''))).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      transient: true,
    });
    const long = apiError(
      400,
      '{"error":{"code":"context_length_exceeded","message":"maximum context length is 8192"}}',
    );
    expect(classifyModelError(long)).toMatchObject({ code: 'MODEL_CONTEXT_TOO_LONG', transient: false });
  });

  it("another 4xx is MODEL_ERROR with a safe message: the provider's text stays in the detail", () => {
    const failure = classifyModelError(apiError(401, 'Incorrect API key provided: sk-abc'));
    expect(failure).toMatchObject({
      code: 'MODEL_ERROR',
      transient: false,
      message: 'The model provider refused the request',
    });
    expect(failure.detail).toMatch(/401/);
  });

  it('a connection failure anywhere in the causes is MODEL_UNAVAILABLE, naming no host to the user', () => {
    const dns = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND api.openai.com'), { code: 'ENOTFOUND' }),
    });
    const failure = classifyModelError(dns);
    expect(failure).toMatchObject({ code: 'MODEL_UNAVAILABLE', transient: true });
    expect(failure.message).not.toMatch(/openai|ENOTFOUND/);
    expect(failure.detail).toMatch(/ENOTFOUND api\.openai\.com/);
    // An answer cut mid-body: the SDK reports the (successful) status it had, the cause the reset.
    const cut = Object.assign(new Error('Failed to process successful response'), {
      statusCode: 200,
      cause: new TypeError('terminated', {
        cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
      }),
    });
    expect(classifyModelError(cut).code).toBe('MODEL_UNAVAILABLE');
  });

  it("an error with no provider detail (the scripted model's) keeps its first line", () => {
    expect(classifyModelError(new Error('boom\nat stack'))).toMatchObject({
      code: 'MODEL_ERROR',
      message: 'boom',
    });
  });

  it('finds a ModelFailure wrapped by the engine', () => {
    const failure = ModelFailure.of('MODEL_TIMEOUT', 'no part within 10 ms');
    expect(modelFailureOf(new Error('wrapped', { cause: failure }))).toBe(failure);
    expect(modelFailureOf(new Error('plain'))).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, retry-after in seconds, or as an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after-ms': '250' })).toBe(250);
    expect(retryAfterMs({ 'retry-after': '1.5' })).toBe(1500);
    const now = Date.parse('2026-12-03T10:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Thu, 03 Dec 2026 10:00:03 GMT' }, now)).toBe(3000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});
