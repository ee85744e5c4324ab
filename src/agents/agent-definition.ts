import { Tool } from '@mastra/core/tools';

/** What it takes to add an agent: one file exporting one of these, listed in `agents/index.ts`. */
export type AgentDefinition = {
  id: string;
  name: string;
  description?: string;
  instructions: string;
  /** A provider/model id; absent means the configured `MODEL` (the scripted model by default). */
  model?: string;
  /** Server tools: the backend runs them. The model calls each by its `id`. */
  tools?: Array<Tool<any, any, any, any, any, any, any>>;
  defaults?: { maxSteps?: number };
};
