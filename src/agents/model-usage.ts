import type { TokenUsage } from '../protocol/usage';

type Counts = Record<string, unknown>;

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;

const sum = (...values: Array<number | undefined>): number | undefined =>
  values.some((v) => v !== undefined) ? values.reduce<number>((a, v) => a + (v ?? 0), 0) : undefined;

/**
 * A provider call's usage, as its `finish` stream part reports it, in AG-UI's `TokenUsage`. Reads
 * the provider-spec v3 shape (`inputTokens: {total, noCache, cacheRead, cacheWrite}`,
 * `outputTokens: {total, text, reasoning}`) and the v2 shape (plain numbers). Undefined when the
 * call reported no count above zero: a model that reports nothing (or only zeros, as the scripted
 * model does) adds nothing to the run.
 */
export function tokenUsageOf(
  usage: unknown,
  labels: { provider?: string; model?: string },
): TokenUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const u = usage as Counts;
  let input: number | undefined;
  let output: number | undefined;
  let cached: number | undefined;
  let cacheWrite: number | undefined;
  let reasoning: number | undefined;
  if (u.inputTokens && typeof u.inputTokens === 'object') {
    const i = u.inputTokens as Counts;
    cached = count(i.cacheRead);
    cacheWrite = count(i.cacheWrite);
    input = count(i.total) ?? sum(count(i.noCache), cached, cacheWrite);
  } else {
    input = count(u.inputTokens);
    cached = count(u.cachedInputTokens);
  }
  if (u.outputTokens && typeof u.outputTokens === 'object') {
    const o = u.outputTokens as Counts;
    reasoning = count(o.reasoning);
    output = count(o.total) ?? sum(count(o.text), reasoning);
  } else {
    output = count(u.outputTokens);
    reasoning = count(u.reasoningTokens);
  }
  if (![input, output].some((v) => v !== undefined && v > 0)) return undefined;
  return {
    ...(labels.provider ? { provider: labels.provider } : {}),
    ...(labels.model ? { model: labels.model } : {}),
    ...(input !== undefined ? { inputTokens: input } : {}),
    ...(output !== undefined ? { outputTokens: output } : {}),
    ...(input !== undefined && output !== undefined ? { totalTokens: input + output } : {}),
    ...(reasoning ? { reasoningTokens: reasoning } : {}),
    ...(cached ? { cachedInputTokens: cached } : {}),
    ...(cacheWrite ? { cacheWriteInputTokens: cacheWrite } : {}),
  };
}
