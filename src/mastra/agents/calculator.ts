import { Agent } from '@mastra/core/agent';
import { ScriptedModel } from '../../agents/scripted-model';
import { calculatorTool } from '../tools/server-tools';

/** Arithmetic with its calculate tool, and nothing else. */
export const calculator = new Agent({
  id: 'calculator',
  name: 'Calculator',
  description: 'Does arithmetic with its calculate tool, and nothing else.',
  instructions:
    'You only do arithmetic. Use the calculate tool for every computation and answer with the result.',
  // The offline default; io-bridge's MODEL replaces it (docs/agents.md#built-in-agents).
  model: new ScriptedModel(),
  tools: { calculate: calculatorTool },
  defaultOptions: { maxSteps: 4, modelSettings: { temperature: 0 } },
});
