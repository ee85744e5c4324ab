import { Tool } from '@mastra/core/tools';

/** Settings a client may pass for the model; clamped to the configured ceilings, never trusted as they are. */
export type ModelSettings = {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  maxRetries?: number;
};

/**
 * An agent io-bridge builds itself: a built-in one (read from src/mastra, built-in-agents.ts) or one
 * of the agents file, with the operator's settings over it.
 */
export type AgentDefinition = {
  id: string;
  name: string;
  description?: string;
  instructions: string;
  /** A provider/model id; absent means the configured `MODEL` (the scripted model by default). */
  model?: string;
  /** Server tools: the backend runs them. The model calls each by its `id`. */
  tools?: Array<Tool<any, any, any, any, any, any, any>>;
  /** What a run uses unless its forwardedProps say otherwise (within the configured ceilings). */
  defaults?: { maxSteps?: number; lastMessages?: number; modelSettings?: ModelSettings };
  /** The model's context window in tokens (else `MODEL_CONTEXT_TOKENS`): a thread's history is fitted into it. */
  contextTokens?: number;
};
