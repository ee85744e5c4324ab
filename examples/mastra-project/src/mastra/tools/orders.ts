import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

/** A server tool: the backend runs it and the model reads its result. */
export const orderStatusTool = createTool({
  id: 'order-status',
  description: 'The delivery status of an order, by its number',
  inputSchema: z.object({ orderId: z.string().describe('The order number, e.g. A-1001') }),
  outputSchema: z.object({ orderId: z.string(), status: z.string() }),
  execute: ({ orderId }) =>
    Promise.resolve({ orderId, status: orderId.endsWith('1') ? 'shipped' : 'packing' }),
});

/** A tool with consequences: Mastra's `requireApproval` makes io-bridge ask the user first. */
export const cancelOrderTool = createTool({
  id: 'cancel-order',
  description: 'Cancels an order, by its number',
  inputSchema: z.object({ orderId: z.string() }),
  outputSchema: z.object({ orderId: z.string(), cancelled: z.boolean() }),
  requireApproval: true,
  execute: ({ orderId }) => Promise.resolve({ orderId, cancelled: true }),
});
