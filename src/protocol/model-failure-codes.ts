/** The RUN_ERROR codes of a model call's failure, as a client sees them (docs/usage-and-budgets.md). */
export const MODEL_FAILURE_CODES = [
  'MODEL_ERROR',
  'MODEL_RATE_LIMITED',
  'MODEL_UNAVAILABLE',
  'MODEL_TIMEOUT',
  'MODEL_CONTEXT_TOO_LONG',
] as const;
export type ModelFailureCode = (typeof MODEL_FAILURE_CODES)[number];
