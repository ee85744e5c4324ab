import { Body, Controller, HttpCode, Inject, Post, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, type Principal } from '../auth/principal';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { RunAgentInputDto } from './dto/run-agent-input.dto';
import { RunsService } from './runs.service';
import { SseWriter } from './sse-writer';

@ApiTags('runs')
@Controller()
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Starts a run and streams its AG-UI events (one request, one run, one terminal event). */
  @Post('run')
  @HttpCode(200)
  @ApiOkResponse({
    description:
      'An SSE stream of AG-UI events: RUN_STARTED, TEXT_MESSAGE_*, TOOL_CALL_*, STEP_*, REASONING_*, then exactly one RUN_FINISHED or RUN_ERROR',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiBadRequestResponse({ description: 'VALIDATION_FAILED: the body is not a valid RunAgentInput' })
  @ApiNotFoundResponse({ description: 'NOT_FOUND: unknown forwardedProps.agentId' })
  @ApiConflictResponse({ description: 'RUN_ALREADY_EXISTS: the runId was used before' })
  async run(
    @Body() input: RunAgentInputDto,
    @CurrentPrincipal() principal: Principal,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const events$ = await this.runs.start(input, principal);
    new SseWriter(reply, events$, this.config.heartbeatMs);
  }
}
