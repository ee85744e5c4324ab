/**
 * Token counts for one provider and model, as AG-UI 1.0 counts them (`TokenUsage`): input and output
 * are totals; cached, cache-write and reasoning tokens are parts of them, never additions.
 */
export type TokenUsage = {
  provider?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
  cacheWriteInputTokens?: number;
};

const COUNTS = [
  'inputTokens',
  'outputTokens',
  'totalTokens',
  'reasoningTokens',
  'cachedInputTokens',
  'cacheWriteInputTokens',
] as const;

/**
 * Adds one call's usage to a run's, one entry per provider and model (AG-UI's accounting); a count
 * no call reported stays absent rather than zero.
 */
export function addUsage(entries: TokenUsage[], usage: TokenUsage): void {
  let entry = entries.find((e) => e.provider === usage.provider && e.model === usage.model);
  if (!entry) {
    entry = {
      ...(usage.provider !== undefined ? { provider: usage.provider } : {}),
      ...(usage.model !== undefined ? { model: usage.model } : {}),
    };
    entries.push(entry);
  }
  for (const key of COUNTS) {
    const value = usage[key];
    if (value !== undefined) entry[key] = (entry[key] ?? 0) + value;
  }
}

/** The tokens a budget counts: input plus output, over every entry. */
export function tokensOf(entries: readonly TokenUsage[] | null | undefined): number {
  return (entries ?? []).reduce((sum, e) => sum + (e.inputTokens ?? 0) + (e.outputTokens ?? 0), 0);
}

/** A run's usage so far as its checkpoints keep it (the run record's `usage` and `tokens`): nothing when none. */
export function spentSoFar(entries: TokenUsage[] | undefined): { usage?: TokenUsage[]; tokens?: number } {
  return entries?.length ? { usage: entries, tokens: tokensOf(entries) } : {};
}
