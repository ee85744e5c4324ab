import { Mastra } from '@mastra/core/mastra';
import { PostgresStore } from '@mastra/pg';
import { supportAgent } from './agents/support-agent';

if (!process.env.DATABASE_URL)
  throw new Error('DATABASE_URL is not set (io-bridge sets it to its own database)');

/**
 * The project's Mastra instance: what `MASTRA_ENTRY` names (this file). Its storage (threads,
 * messages, working memory) is Postgres at DATABASE_URL: io-bridge's own database when io-bridge
 * serves it, the embedded one by default.
 */
export const mastra = new Mastra({
  agents: { supportAgent },
  storage: new PostgresStore({ id: 'example-storage', connectionString: process.env.DATABASE_URL }),
});
