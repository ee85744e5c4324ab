import { tokenUsageOf } from './model-usage';

const labels = { provider: 'openai', model: 'gpt-4o-mini' };

describe('tokenUsageOf', () => {
  it('reads the provider-spec v3 shape: totals as they are, cache and reasoning as parts of them', () => {
    const usage = {
      inputTokens: { total: 120, noCache: 80, cacheRead: 30, cacheWrite: 10 },
      outputTokens: { total: 40, text: 25, reasoning: 15 },
    };
    expect(tokenUsageOf(usage, labels)).toEqual({
      provider: 'openai',
      model: 'gpt-4o-mini',
      inputTokens: 120,
      outputTokens: 40,
      totalTokens: 160,
      reasoningTokens: 15,
      cachedInputTokens: 30,
      cacheWriteInputTokens: 10,
    });
  });

  it('adds up the parts when a v3 total is missing', () => {
    const usage = {
      inputTokens: { total: undefined, noCache: 7, cacheRead: 3, cacheWrite: undefined },
      outputTokens: { total: undefined, text: 4, reasoning: undefined },
    };
    expect(tokenUsageOf(usage, {})).toEqual({
      inputTokens: 10,
      outputTokens: 4,
      totalTokens: 14,
      cachedInputTokens: 3,
    });
  });

  it('reads the v2 shape (plain numbers)', () => {
    expect(
      tokenUsageOf({ inputTokens: 5, outputTokens: 2, totalTokens: 7, cachedInputTokens: 1 }, labels),
    ).toEqual({ ...labels, inputTokens: 5, outputTokens: 2, totalTokens: 7, cachedInputTokens: 1 });
  });

  it('reports nothing for no counts, zeros (the scripted model) or counts that are not numbers', () => {
    expect(tokenUsageOf(undefined, labels)).toBeUndefined();
    expect(
      tokenUsageOf(
        { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0 } },
        labels,
      ),
    ).toBeUndefined();
    expect(tokenUsageOf({ inputTokens: NaN, outputTokens: 'many' }, labels)).toBeUndefined();
  });
});
