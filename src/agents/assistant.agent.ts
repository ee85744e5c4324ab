import { AgentDefinition } from './agent-definition';
import { calculatorTool, currentTimeTool } from './tools/server-tools';

export const assistantAgent: AgentDefinition = {
  id: 'assistant',
  name: 'Assistant',
  description:
    'A general assistant with a clock and a calculator. Offline it runs on the built-in scripted model.',
  instructions:
    'You are a helpful assistant. Answer concisely. Use current_time for the date or time and calculate for arithmetic.',
  tools: [currentTimeTool, calculatorTool],
};
