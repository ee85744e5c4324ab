import { Controller, Get, Headers, Param, Query, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { PinoLogger } from 'nestjs-pino';
import { CurrentPrincipal, type Principal } from '../auth/principal';
import { ApiErrors } from '../common/api-errors.decorator';
import { DomainError } from '../common/errors';
import { FairShares } from '../common/fair-shares';
import { RUN_STREAM_CONTENT } from '../protocol/run-events.dto';
import { SseResponses } from './stream/sse-responses';
import { parseThreadEventId, ThreadPosition, ThreadStreams } from './stream/thread-streams.service';
import { rejoinPoint } from './stream/rejoin-point';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

/**
 * A thread's runs as one stream (docs/protocol.md#following-a-thread): a route under /threads served here, in runs/, because it
 * reads the runs' event logs (threads/ knows nothing of runs).
 */
@ApiTags('threads')
@ApiHeader({
  name: 'X-Resource-Id',
  required: false,
  description:
    'The owner scope with AUTH_MODE=none, percent-encoded UTF-8 (or ?resourceId=); default `anonymous`',
})
@ApiErrors({
  UNAUTHENTICATED: 'missing or invalid bearer token',
  FORBIDDEN: "the resourceId named is not the caller's",
})
@Controller()
@IoBridgeRoutes()
export class ThreadEventsController {
  constructor(
    private readonly threads: ThreadStreams,
    private readonly sse: SseResponses,
    private readonly pino: PinoLogger,
    private readonly shares: FairShares,
  ) {}

  /** Follows a thread across its runs, wherever they run; resumes after `Last-Event-ID` (or `?after=`). */
  @Get('threads/:threadId/events')
  @ApiOperation({
    summary: "Follow a thread's runs as they happen (other tabs, other devices, queued runs)",
    description:
      'One SSE stream of every run of the thread, in the order they started: the active run from its ' +
      'RUN_STARTED (none active: the next run), each to its terminal event, then the next run whenever and ' +
      'on whichever instance it starts. The stream stays open between runs (heartbeat comments) and never ' +
      'ends by itself: close it. Frames are as on POST /run, except the id: `id: <run>:<seq>`, the run ' +
      "counted from 1 in the thread's order and `seq` the run's own event number. Resume with " +
      '`Last-Event-ID` (or `?after=`) set to the last id seen: exactly the events after it, then every ' +
      'later run. Runs whose events are no longer kept (RUN_EVENTS_RETENTION_MS) are skipped.',
  })
  @ApiHeader({
    name: 'Last-Event-ID',
    required: false,
    description: 'The id of the last event the client has (`<run>:<seq>`): the stream starts after it',
  })
  @ApiQuery({
    name: 'after',
    required: false,
    type: String,
    description: 'As Last-Event-ID, for a first connection (EventSource cannot set headers)',
  })
  @ApiOkResponse({
    description: "An SSE stream of the thread's runs' AG-UI events",
    content: RUN_STREAM_CONTENT,
  })
  @ApiErrors({
    VALIDATION_FAILED: 'Last-Event-ID or after is not `<run>:<seq>` (integers, the run from 1)',
    NOT_FOUND: "unknown thread, or another owner's",
    TOO_MANY_READERS:
      'MAX_READERS_PER_OWNER streams of this owner, or MAX_READERS_PER_RUN of this thread, are open',
  })
  async events(
    @Param('threadId') threadId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Query('after') afterParam: unknown,
    @CurrentPrincipal() principal: Principal,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const after = rejoinPoint(lastEventId, afterParam, threadEventId);
    this.pino.assign({ threadId, resourceId: principal.resourceId });
    // The owner first: a request for another owner's thread takes nothing of that thread's readers.
    const thread = await this.threads.find(threadId, principal);
    // Taken before the thread's runs are read, released when the stream closes (or when nothing is streamed).
    const share = this.shares.takeThreadReader(
      principal.resourceId,
      threadId,
      reply.request.socket.remoteAddress,
    );
    await this.sse.holding(reply, share, async () => {
      const follow = await this.threads.join(thread, after);
      follow(this.sse.connection(reply));
    });
  }
}

/** A thread event id as a client sends it back, else a 400. */
function threadEventId(value: unknown, name: string): ThreadPosition {
  const position = typeof value === 'string' ? parseThreadEventId(value) : undefined;
  if (position) return position;
  throw new DomainError('VALIDATION_FAILED', `${name} must be a thread event id, <run>:<seq>`, [
    {
      path: name,
      message: 'must be <run>:<seq>: integers up to 2^53 - 1, the run from 1 (the id of an event)',
    },
  ]);
}
