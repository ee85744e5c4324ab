import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class AgentToolView {
  @ApiProperty({ example: 'calculate' })
  name: string;

  @ApiProperty()
  description: string;

  @ApiPropertyOptional({
    description:
      'A person approves each call before it runs: the run ends with an AG-UI interrupt, answered by `resume` in a later run',
  })
  requiresApproval?: boolean;
}

export class AgentCapabilitiesView {
  @ApiProperty({ description: 'Always true: RunAgentInput.tools are offered to the model' })
  frontendTools: boolean;

  @ApiProperty({ description: 'forwardedProps.structuredOutput is honoured' })
  structuredOutput: boolean;

  @ApiProperty({ description: 'The thread history is the memory' })
  memory: boolean;
}

export class McpServerStatusView {
  @ApiProperty({ example: 'files' })
  name: string;

  @ApiProperty({
    enum: ['stdio', 'http', 'sse'],
    description: '`sse`: an HTTP server that answers only over the older SSE transport',
  })
  transport: 'stdio' | 'http' | 'sse';

  @ApiProperty({
    enum: ['connecting', 'connected', 'unavailable'],
    description:
      'Its tools are offered only while it is `connected`; an unavailable server reconnects with backoff',
  })
  status: 'connecting' | 'connected' | 'unavailable';

  @ApiPropertyOptional({ description: 'Why it is unavailable: its last connection error' })
  error?: string;
}

/** An agent as docs/protocol.md#routes shows it. */
export class AgentView {
  @ApiProperty({ example: 'assistant' })
  id: string;

  @ApiProperty({ example: 'Assistant' })
  name: string;

  @ApiPropertyOptional()
  description?: string;

  @ApiProperty({
    description: 'The model the agent runs on: `scripted`, or a provider/model id',
    example: 'scripted',
  })
  modelId: string;

  @ApiProperty({ type: [AgentToolView], description: 'Its server tools' })
  tools: AgentToolView[];

  @ApiPropertyOptional({
    type: [McpServerStatusView],
    description:
      'The MCP servers whose tools it uses (an agent of AGENTS_CONFIG), and whether each is connected',
  })
  mcpServers?: McpServerStatusView[];

  @ApiProperty({ type: AgentCapabilitiesView })
  capabilities: AgentCapabilitiesView;
}

export class AgentsList {
  @ApiProperty({ type: [AgentView] })
  agents: AgentView[];

  @ApiProperty({
    description: 'The agent a run uses when forwardedProps.agentId is absent',
    example: 'assistant',
  })
  defaultAgentId: string;
}
