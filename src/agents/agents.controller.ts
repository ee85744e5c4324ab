import { Controller, Get, Param } from '@nestjs/common';
import {
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ErrorEnvelope } from '../common/error-envelope.dto';
import { AgentsService } from './agents.service';
import { AgentsList, AgentView } from './dto/agent-view.dto';

@ApiTags('agents')
@ApiUnauthorizedResponse({
  type: ErrorEnvelope,
  description: 'UNAUTHENTICATED: missing or invalid bearer token',
})
@Controller('agents')
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
  @ApiNotFoundResponse({ type: ErrorEnvelope, description: 'NOT_FOUND: unknown agent' })
  get(@Param('agentId') agentId: string): AgentView {
    return this.agents.view(agentId);
  }
}
