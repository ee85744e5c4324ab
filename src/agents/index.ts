import { AgentDefinition } from './agent-definition';
import { assistantAgent } from './assistant.agent';
import { calculatorAgent } from './calculator.agent';

/** Every agent the service offers. Add a definition file and list it here. */
export const agentDefinitions: AgentDefinition[] = [assistantAgent, calculatorAgent];
