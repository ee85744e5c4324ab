import { Controller, Get, Param } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { AgentsService } from './agents.service';
import { AgentsList, AgentView } from './dto/agent-view.dto';

@ApiTags('agents')
@Controller('agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  /** The agents this service offers, and the one a run uses when `forwardedProps.agentId` is absent. */
  @Get()
  @ApiOkResponse({ type: AgentsList })
  list(): AgentsList {
    return {
      agents: this.agents.list().map((a) => this.agents.view(a.definition.id)),
      defaultAgentId: this.agents.defaultAgentId,
    };
  }

  @Get(':agentId')
  @ApiOkResponse({ type: AgentView })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  get(@Param('agentId') agentId: string): AgentView {
    return this.agents.view(agentId);
  }
}
