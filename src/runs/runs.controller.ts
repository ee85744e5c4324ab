import { FairShares } from '../common/fair-shares';
import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiExtraModels,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, idScope, type Principal } from '../auth/principal';
import { DomainError } from '../common/errors';
import { ApiErrors } from '../common/api-errors.decorator';
import { runExample } from '../protocol/run-agent-input.dto';
import { RUN_AGENT_INPUT_BODY } from '../openapi/run-agent-input';
import { type RunAgentInput, RunAgentInputPipe } from '../protocol/run-agent-input.schema';
import { AcceptedView, RunView } from './dto/run-view.dto';
import { AgUiEventFrame, RUN_STREAM_CONTENT, RUN_STREAM_DESCRIPTION } from '../protocol/run-events.dto';
import { ToolResultDto } from './dto/tool-result.dto';
import { RunRoute } from './run-route';
import { RunViews } from './run-views.service';
import { RunCancels } from './engine/run-cancels';
import { FrontendToolResults } from './tools/frontend-tool-results';
import { EARLY_RESULTS_PER_RUN } from './storage/tool-calls.repository';
import { PinoLogger } from 'nestjs-pino';
import { RunRateLimitGuard } from './run-rate-limit.guard';
import { SseResponses } from './stream/sse-responses';
import { RunStreams } from './stream/run-streams.service';
import { rejoinPoint } from './stream/rejoin-point';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

@ApiTags('runs')
@ApiHeader({
  name: 'X-Resource-Id',
  required: false,
  description:
    'The owner scope with AUTH_MODE=none, percent-encoded UTF-8 (or forwardedProps.resourceId / ' +
    'forwardedProps.memory.resource / ?resourceId=); without any, a route naming a run id finds it whoever owns it',
})
@ApiErrors({
  UNAUTHENTICATED: 'missing or invalid bearer token',
  FORBIDDEN: "the resourceId named is not the caller's",
})
@Controller()
@IoBridgeRoutes()
export class RunsController {
  constructor(
    private readonly route: RunRoute,
    private readonly streams: RunStreams,
    private readonly sse: SseResponses,
    private readonly pino: PinoLogger,
    private readonly shares: FairShares,
    private readonly views: RunViews,
    private readonly cancels: RunCancels,
    private readonly toolResults: FrontendToolResults,
  ) {}

  /** Starts a run and streams its AG-UI events (one request, one run, one terminal event). */
  @Post('run')
  @HttpCode(200)
  @UseGuards(RunRateLimitGuard)
  @ApiOperation({ summary: 'Start a run and stream its AG-UI events', description: RUN_STREAM_DESCRIPTION })
  @ApiExtraModels(AgUiEventFrame)
  @ApiBody({
    required: true,
    description: 'A RunAgentInput. Every run needs a new runId: change it before sending the example again.',
    examples: { chat: { summary: 'A chat turn (fresh runId on every load)', value: runExample() } },
  })
  @ApiOkResponse({
    description:
      'An SSE stream of AG-UI events: RUN_STARTED, TEXT_MESSAGE_*, TOOL_CALL_*, STEP_*, REASONING_*, then exactly one RUN_FINISHED or RUN_ERROR',
    content: RUN_STREAM_CONTENT,
  })
  @ApiErrors({
    VALIDATION_FAILED:
      'the body is not a valid RunAgentInput (e.g. an unknown forwardedProps.ifBusy), or not JSON',
    NOT_FOUND:
      'unknown forwardedProps.agentId, a thread another owner holds, or an unknown interrupt in resume',
    RUN_ALREADY_EXISTS: 'the runId was used before: use a new runId for every run',
    THREAD_BUSY:
      'the thread has an active run (forwardedProps.ifBusy reject, the default), or still had one after RUN_QUEUE_WAIT_MS (enqueue, interrupt)',
    INTERRUPT_ALREADY_RESOLVED: 'resume answers an interrupt that was answered already',
    INTERRUPT_EXPIRED: 'resume answers an interrupt older than APPROVAL_TTL_MS',
    PAYLOAD_TOO_LARGE: 'the body is larger than MAX_BODY_BYTES',
    RATE_LIMITED: 'too many runs for this owner; retry after Retry-After seconds',
    TOO_MANY_ACTIVE_RUNS:
      'the owner (or, with AUTH_MODE=none, the address) has MAX_ACTIVE_RUNS_PER_OWNER live runs',
    QUOTA_EXCEEDED: "the owner's token budget for the window is spent; retry after Retry-After seconds",
    SHUTTING_DOWN: 'this instance is draining; retry',
  })
  run(
    @Body({ schema: RUN_AGENT_INPUT_BODY, pipes: [RunAgentInputPipe] }) input: RunAgentInput,
    @CurrentPrincipal() principal: Principal,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    return this.route.serve(input, principal, reply);
  }

  /**
   * Rejoins a run's stream, on any instance: the events after `Last-Event-ID` (or `?after=`), then
   * live until the terminal event, the same bytes the run's other readers get.
   */
  @Get('runs/:runId/events')
  @ApiOperation({
    summary: "Rejoin a run's event stream (replay after Last-Event-ID, then live)",
    description:
      'The SSE stream of the run, as POST /run sends it (`id: <seq>`, `data: <AG-UI event>`): every event ' +
      'after the sequence number in `Last-Event-ID` (or `?after=`; the header wins; none: from the first), then ' +
      'the live events until the terminal one. Works on any instance, while the run runs and for ' +
      'RUN_EVENTS_RETENTION_MS after it ended. Browser EventSource can use it as it is.',
  })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'The id of the last event the client has: the stream starts after it',
  })
  @ApiQuery({
    name: 'after',
    required: false,
    type: Number,
    description: 'As Last-Event-ID, for a first connection (EventSource cannot set headers)',
  })
  @ApiOkResponse({ description: "An SSE stream of the run's AG-UI events", content: RUN_STREAM_CONTENT })
  @ApiNoContentResponse({
    description: 'The run ended and the client has every event (an EventSource stops reconnecting)',
  })
  @ApiErrors({
    VALIDATION_FAILED: 'Last-Event-ID or after is not an integer from 0 to 2^53 - 1',
    NOT_FOUND: "unknown run, or another owner's",
    RUN_EVENTS_EXPIRED:
      'the run ended longer than RUN_EVENTS_RETENTION_MS ago: its events are no longer kept',
    TOO_MANY_READERS:
      'MAX_READERS_PER_OWNER streams of this owner, or MAX_READERS_PER_RUN of this run, are open',
    SERVICE_UNAVAILABLE:
      "the run's stored events cannot be read now (the database, or the streams' half of the pool, is busy); retry",
  })
  async events(
    @Param('runId') runId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') afterParam: unknown,
    @CurrentPrincipal() principal: Principal,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const after = rejoinPoint(lastEventId, afterParam, sequenceNumber) ?? 0;
    this.pino.assign({ runId, resourceId: principal.resourceId });
    // The owner first: a request for another owner's run takes nothing of that run's readers.
    const run = await this.streams.find(runId, principal);
    // Taken before the events are read, released when the stream closes (or when nothing is streamed).
    const share = this.shares.takeReader(principal.resourceId, runId, reply.request.socket.remoteAddress);
    await this.sse.holding(reply, share, async () => {
      const join = await this.streams.join(run, after);
      if (join) join(this.sse.writer(reply, after));
      else await reply.status(204).send();
    });
  }

  /** A frontend tool's result, delivered to the waiting run on whichever instance holds it. */
  @Post('runs/:runId/tool-calls/:toolCallId/result')
  @HttpCode(202)
  @ApiOperation({ summary: "Deliver a frontend tool's result to the waiting run" })
  @ApiAcceptedResponse({
    type: AcceptedView,
    description: 'The result reached the run, or is kept for a call the run has not registered yet',
  })
  @ApiErrors({
    VALIDATION_FAILED: 'not an object, or none of content, result and error',
    NOT_FOUND:
      `unknown run (or another owner's), or a live run already keeping ${EARLY_RESULTS_PER_RUN} ` +
      'results for calls it has not registered',
    TOOL_RESULT_ALREADY_SUBMITTED: 'this tool call has its result already',
    RUN_NOT_ACTIVE: 'the run has ended',
  })
  async submitToolResult(
    @Param('runId') runId: string,
    @Param('toolCallId') toolCallId: string,
    @Body() body: ToolResultDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ accepted: true }> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new DomainError('VALIDATION_FAILED', 'The body must be an object with content or error');
    }
    const content = body.content !== undefined ? body.content : body.result;
    if (content === undefined && body.error === undefined) {
      throw new DomainError('VALIDATION_FAILED', 'The body needs content or error', [
        { path: 'content', message: 'content (or result) or error is required' },
      ]);
    }
    await this.toolResults.post(runId, idScope(principal, 'write'), toolCallId, {
      content,
      error: body.error,
    });
    return { accepted: true };
  }

  /** Stops a run: the model call and pending tool waits; its stream ends with RUN_ERROR CANCELLED. */
  @Post('runs/:runId/cancel')
  @HttpCode(202)
  @ApiOperation({ summary: 'Cancel a run (its stream ends with RUN_ERROR CANCELLED)' })
  @ApiAcceptedResponse({ type: AcceptedView, description: 'The run is being cancelled' })
  @ApiErrors({ NOT_FOUND: "unknown run, or another owner's", RUN_NOT_ACTIVE: 'the run has ended' })
  async cancel(
    @Param('runId') runId: string,
    @CurrentPrincipal() principal: Principal,
  ): Promise<{ accepted: true }> {
    await this.cancels.cancel(runId, principal);
    return { accepted: true };
  }

  /** A run's status and the frontend tool calls it waits for. */
  @Get('runs/:runId')
  @ApiOperation({ summary: "Read a run's status and the tool calls it waits for" })
  @ApiOkResponse({ type: RunView })
  @ApiErrors({ NOT_FOUND: "unknown run, or another owner's" })
  getRun(@Param('runId') runId: string, @CurrentPrincipal() principal: Principal): Promise<RunView> {
    return this.views.get(runId, principal);
  }
}

/** An event id: a decimal integer from 0 to 2^53 - 1 (Number.MAX_SAFE_INTEGER), else a 400. */
function sequenceNumber(value: unknown, name: string): number {
  const text = typeof value === 'string' ? value.trim() : '';
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new DomainError('VALIDATION_FAILED', `${name} must be a non-negative integer`, [
      { path: name, message: 'must be an integer from 0 to 2^53 - 1 (the id of an event)' },
    ]);
  }
  return Number(text);
}
