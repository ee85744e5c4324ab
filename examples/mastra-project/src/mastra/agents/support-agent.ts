import { Agent } from '@mastra/core/agent';
import { MASTRA_RESOURCE_ID_KEY } from '@mastra/core/request-context';
import { Memory } from '@mastra/memory';
import { model } from '../model';
import { cancelOrderTool, orderStatusTool } from '../tools/orders';

/**
 * An agent as Mastra users write one: its instructions are a function of the request context, so
 * each caller is served as themselves (io-bridge puts the owner under MASTRA_RESOURCE_ID_KEY and the
 * caller's claims under `claims`).
 */
export const supportAgent = new Agent({
  id: 'support-agent',
  name: 'Support Agent',
  description: 'Answers questions about orders',
  instructions: ({ requestContext }) => {
    const owner = String(requestContext.get(MASTRA_RESOURCE_ID_KEY) ?? 'a guest');
    const claims = requestContext.get<string, { name?: string } | undefined>('claims');
    return `You help customers with their orders. You are talking to ${owner}${claims?.name ? ` (${claims.name})` : ''}.`;
  },
  model,
  tools: { orderStatus: orderStatusTool, cancelOrder: cancelOrderTool },
  memory: new Memory({
    options: {
      lastMessages: 20,
      generateTitle: true,
      workingMemory: { enabled: true, scope: 'resource' },
    },
  }),
});
