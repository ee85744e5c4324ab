import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-errors.decorator';
import { AgentsService } from './agents.service';
import { AgentsList, AgentView } from './dto/agent-view.dto';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

@ApiTags('agents')
@ApiErrors({ UNAUTHENTICATED: 'missing or invalid bearer token' })
@Controller('agents')
@IoBridgeRoutes()
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  /** The agents this service offers, and the one a run uses when `forwardedProps.agentId` is absent. */
  @Get()
  @ApiOperation({ summary: 'List the agents and the default one' })
  @ApiOkResponse({ type: AgentsList })
  list(): AgentsList {
    return {
      agents: this.agents.list().map((a) => this.agents.view(a.definition.id)),
      defaultAgentId: this.agents.defaultAgentId,
    };
  }

  @Get(':agentId')
  @ApiOperation({ summary: 'Read an agent' })
  @ApiOkResponse({ type: AgentView })
  @ApiErrors({ NOT_FOUND: 'unknown agent' })
  get(@Param('agentId') agentId: string): AgentView {
    return this.agents.view(agentId);
  }
}
