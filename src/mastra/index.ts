import { Mastra } from '@mastra/core/mastra';
import { assistant } from './agents/assistant';
import { calculator } from './agents/calculator';

/**
 * io-bridge's built-in agents, an ordinary Mastra project: what the service serves without
 * `MASTRA_ENTRY`, and the shape of the project a team brings (docs/agents.md#built-in-agents).
 */
export const mastra = new Mastra({
  agents: { assistant, calculator },
  // io-bridge keeps their threads and logs their runs: the instance needs neither storage nor a logger.
  logger: false,
});
