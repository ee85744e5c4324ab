import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { MASTRA_RESOURCE_ID_KEY } from '@mastra/core/request-context';
import { createTool } from '@mastra/core/tools';
import { Memory } from '@mastra/memory';
import { PostgresStore } from '@mastra/pg';
import { z } from 'zod';

/** The model: an OpenAI-compatible server when OPENAI_BASE_URL is set, else OpenAI through Mastra's router. */
const model = process.env.OPENAI_BASE_URL
  ? createOpenAICompatible({
      name: 'openai',
      baseURL: process.env.OPENAI_BASE_URL,
      apiKey: process.env.OPENAI_API_KEY ?? 'not-needed',
      includeUsage: true,
    }).chatModel('gpt-4o-mini')
  : 'openai/gpt-4o-mini';

const roomTool = createTool({
  id: 'freeRoom',
  description: 'A free meeting room on a floor',
  inputSchema: z.object({ floor: z.number() }),
  execute: ({ floor }) => Promise.resolve({ floor, room: `${floor}.12` }),
});

/** A tool with consequences: `requireApproval` makes io-bridge ask the employee first. */
const bookTool = createTool({
  id: 'bookRoom',
  description: 'Books a meeting room',
  inputSchema: z.object({ room: z.string() }),
  requireApproval: true,
  execute: ({ room }) => Promise.resolve({ room, booked: true }),
});

/**
 * The company's agent, written as Mastra users write one: its instructions name the employee the
 * host's guard found (io-bridge puts the owner under MASTRA_RESOURCE_ID_KEY and the claims the host
 * mapped under `claims`).
 */
const deskAgent = new Agent({
  id: 'desk-agent',
  name: 'Desk Agent',
  description: 'Finds meeting rooms',
  instructions: ({ requestContext }) => {
    const claims = requestContext.get<string, { name?: string } | undefined>('claims');
    return `You find meeting rooms for ${String(requestContext.get(MASTRA_RESOURCE_ID_KEY))} (${claims?.name ?? 'unknown'}).`;
  },
  model,
  tools: { freeRoom: roomTool, bookRoom: bookTool },
  memory: new Memory({ options: { lastMessages: 10 } }),
});

export function createMastra(databaseUrl: string): Mastra {
  return new Mastra({
    agents: { deskAgent },
    storage: new PostgresStore({ id: 'host-storage', connectionString: databaseUrl }),
  });
}
