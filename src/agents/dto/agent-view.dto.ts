export class AgentToolView {
  name: string;
  description: string;
}

export class AgentCapabilitiesView {
  frontendTools: boolean;
  structuredOutput: boolean;
  memory: boolean;
}

/** An agent as CONTRACT section 1 shows it. */
export class AgentView {
  id: string;
  name: string;
  description?: string;
  /** The model the agent runs on: `scripted`, or a provider/model id. */
  modelId: string;
  /** Its server tools. */
  tools: AgentToolView[];
  capabilities: AgentCapabilitiesView;
}

export class AgentsList {
  agents: AgentView[];
  defaultAgentId: string;
}
