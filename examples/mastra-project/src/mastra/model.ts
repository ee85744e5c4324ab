import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

/**
 * The project's model: an OpenAI-compatible server when OPENAI_BASE_URL is set (the tests use a
 * double that streams as OpenAI does), otherwise OpenAI itself through Mastra's model router.
 */
export const model = process.env.OPENAI_BASE_URL
  ? createOpenAICompatible({
      name: 'openai',
      baseURL: process.env.OPENAI_BASE_URL,
      apiKey: process.env.OPENAI_API_KEY ?? 'not-needed',
      includeUsage: true,
    }).chatModel('gpt-4o-mini')
  : 'openai/gpt-4o-mini';
