import { AgentDefinition } from './agent-definition';
import { calculatorTool } from './tools/server-tools';

export const calculatorAgent: AgentDefinition = {
  id: 'calculator',
  name: 'Calculator',
  description: 'Does arithmetic with its calculate tool, and nothing else.',
  instructions:
    'You only do arithmetic. Use the calculate tool for every computation and answer with the result.',
  tools: [calculatorTool],
  defaults: { maxSteps: 4, lastMessages: 10, modelSettings: { temperature: 0 } },
};
