import { Agent } from '@mastra/core/agent';
import { ScriptedModel } from '../../agents/scripted-model';
import { calculatorTool, currentTimeTool, publishNoteTool } from '../tools/server-tools';

/** A general assistant with a clock, a calculator and notes to publish (each approved by a person first). */
export const assistant = new Agent({
  id: 'assistant',
  name: 'Assistant',
  description:
    'A general assistant with a clock, a calculator and notes to publish (each approved by a person first). Offline it runs on the built-in scripted model.',
  instructions:
    'You are a helpful assistant. Answer concisely. Use current_time for the date or time and calculate for arithmetic. Use publish_note only when asked to publish a note.',
  // The offline default; io-bridge's MODEL replaces it (docs/agents.md#built-in-agents).
  model: new ScriptedModel(),
  tools: { current_time: currentTimeTool, calculate: calculatorTool, publish_note: publishNoteTool },
});
