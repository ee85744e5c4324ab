import { AgentDefinition } from './agent-definition';
import { calculatorTool, currentTimeTool, publishNoteTool } from './tools/server-tools';

export const assistantAgent: AgentDefinition = {
  id: 'assistant',
  name: 'Assistant',
  description:
    'A general assistant with a clock, a calculator and notes to publish (each approved by a person first). Offline it runs on the built-in scripted model.',
  instructions:
    'You are a helpful assistant. Answer concisely. Use current_time for the date or time and calculate for arithmetic. Use publish_note only when asked to publish a note.',
  tools: [currentTimeTool, calculatorTool, publishNoteTool],
};
