import { Body, Controller, Get, HttpCode, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, type Principal } from '../auth/principal';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { DomainError } from '../common/errors';
import { RunAgentInputDto } from './dto/run-agent-input.dto';
import { RunView } from './dto/run-view.dto';
import { ToolResultDto } from './dto/tool-result.dto';
import { RunsService } from './runs.service';
import { PinoLogger } from 'nestjs-pino';
import { Metrics } from '../ops/metrics.service';
import { RunRateLimitGuard } from './run-rate-limit.guard';
import { SseWriter } from './sse-writer';

@ApiTags('runs')
@Controller()
export class RunsController {
  constructor(
    private readonly runs: RunsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly pino: PinoLogger,
  ) {}

  /** Starts a run and streams its AG-UI events (one request, one run, one terminal event). */
  @Post('run')
  @HttpCode(200)
  @UseGuards(RunRateLimitGuard)
  @ApiTooManyRequestsResponse({ description: 'RATE_LIMITED: too many runs for this owner' })
  @ApiServiceUnavailableResponse({ description: 'SHUTTING_DOWN: this instance is draining; retry' })
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
    const started = process.hrtime.bigint();
    // Every log line of this run, in this request's context, names it.
    this.pino.assign({ runId: input.runId, threadId: input.threadId, resourceId: principal.resourceId });
    const events$ = await this.runs.start(input, principal);
    new SseWriter(reply, events$, this.config.heartbeatMs);
    // SseWriter wrote RUN_STARTED synchronously; the whole request lasts until the stream ends.
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    this.metrics.timeToFirstEvent.observe(seconds());
    reply.raw.once('close', () =>
      this.metrics.httpDuration.observe(
        { method: 'POST', route: `${this.config.prefix}/run`, status: '200' },
        seconds(),
      ),
    );
  }

  /** A frontend tool's result, delivered to the waiting run on whichever instance holds it. */
  @Post('runs/:runId/tool-calls/:toolCallId/result')
  @HttpCode(202)
  @ApiAcceptedResponse({ description: 'The result reached the run' })
  @ApiBadRequestResponse({ description: 'VALIDATION_FAILED: not an object, or neither content nor error' })
  @ApiNotFoundResponse({
    description: "NOT_FOUND: unknown run (or another owner's), or unknown tool call of a live run",
  })
  @ApiConflictResponse({ description: 'TOOL_RESULT_ALREADY_SUBMITTED, or RUN_NOT_ACTIVE for an ended run' })
  async submitToolResult(
    @Param('runId') runId: string,
    @Param('toolCallId') toolCallId: string,
    @Body() body: ToolResultDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ accepted: true }> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new DomainError('VALIDATION_FAILED', 'The body must be an object with content or error');
    }
    if (body.content === undefined && body.error === undefined) {
      throw new DomainError('VALIDATION_FAILED', 'The body needs content or error', [
        { path: 'content', message: 'content or error is required' },
      ]);
    }
    await this.runs.submitToolResult(runId, toolCallId, principal, body);
    return { accepted: true };
  }

  /** Stops a run: the model call and pending tool waits; its stream ends with RUN_ERROR CANCELLED. */
  @Post('runs/:runId/cancel')
  @HttpCode(202)
  @ApiAcceptedResponse({ description: 'The run is being cancelled' })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  @ApiConflictResponse({ description: 'RUN_NOT_ACTIVE: the run has ended' })
  async cancel(
    @Param('runId') runId: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ accepted: true }> {
    await this.runs.cancel(runId, principal);
    return { accepted: true };
  }

  /** A run's status and the frontend tool calls it waits for. */
  @Get('runs/:runId')
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  getRun(@Param('runId') runId: string, @CurrentPrincipal() principal: Principal): Promise<RunView> {
    return this.runs.get(runId, principal);
  }
}
