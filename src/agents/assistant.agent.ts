import { AgentDefinition } from './agent-definition';

export const assistantAgent: AgentDefinition = {
  id: 'assistant',
  name: 'Assistant',
  description: 'A general assistant. Offline it runs on the built-in scripted model.',
  instructions: 'You are a helpful assistant. Answer concisely.',
};
