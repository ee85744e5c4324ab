import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, type Principal } from '../auth/principal';
import { ApiErrors } from '../common/api-errors.decorator';
import {
  CreateThreadDto,
  ListMessagesQueryDto,
  ListThreadsQueryDto,
  MessagesPage,
  ThreadsPage,
  ThreadView,
  UpdateThreadDto,
} from './dto/thread.dto';
import { ThreadsService } from './threads.service';
import { IoBridgeRoutes } from '../auth/io-bridge-routes';

@ApiTags('threads')
@ApiHeader({
  name: 'X-Resource-Id',
  required: false,
  description:
    'The owner scope with AUTH_MODE=none, percent-encoded UTF-8 (without it, a route naming a thread id finds ' +
    'it whoever owns it); with authentication, an ADMIN_ROLE caller may read (only) another owner',
})
@ApiErrors({
  UNAUTHENTICATED: 'missing or invalid bearer token',
  FORBIDDEN: "the resourceId named is not the caller's",
})
@Controller('threads')
@IoBridgeRoutes()
export class ThreadsController {
  constructor(private readonly threads: ThreadsService) {}

  /** Creates a thread; the same id again by the same owner returns the existing one with 200. */
  @Post()
  @ApiOperation({ summary: 'Create a thread' })
  @ApiCreatedResponse({ type: ThreadView })
  @ApiOkResponse({ type: ThreadView, description: 'The thread existed already' })
  @ApiErrors({
    VALIDATION_FAILED: 'a bad id, title, agentId or metadata',
    THREAD_ID_CONFLICT: 'another owner holds this id',
  })
  async create(
    @Body() dto: CreateThreadDto,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ThreadView> {
    const { thread, created } = await this.threads.create(dto, principal);
    void reply.status(created ? 201 : 200);
    return thread;
  }

  /** The owner's threads, newest `updatedAt` first: those of Mastra's memory too (docs/protocol.md#where-threads-live). */
  @Get()
  @ApiOperation({
    summary: "List the owner's threads, newest first",
    description: "Mastra's memory's threads of the owner are among them, unless `agentId` is given.",
  })
  @ApiOkResponse({ type: ThreadsPage })
  @ApiErrors({ VALIDATION_FAILED: 'limit outside 1-100 or a bad cursor' })
  list(@Query() query: ListThreadsQueryDto, @CurrentPrincipal() principal: Principal): Promise<ThreadsPage> {
    return this.threads.list(query, principal);
  }

  @Get(':threadId')
  @ApiOperation({ summary: 'Read a thread' })
  @ApiOkResponse({ type: ThreadView })
  @ApiErrors({ NOT_FOUND: "unknown thread, or another owner's" })
  get(@Param('threadId') id: string, @CurrentPrincipal() principal: Principal): Promise<ThreadView> {
    return this.threads.get(id, principal);
  }

  @Patch(':threadId')
  @ApiOperation({ summary: 'Rename a thread or replace its metadata' })
  @ApiOkResponse({ type: ThreadView })
  @ApiErrors({
    VALIDATION_FAILED: 'a bad title or metadata',
    NOT_FOUND: "unknown thread, or another owner's",
  })
  update(
    @Param('threadId') id: string,
    @Body() dto: UpdateThreadDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<ThreadView> {
    return this.threads.update(id, dto, principal);
  }

  /** Deletes the thread and its messages; a run in progress on it is cancelled first. */
  @Delete(':threadId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a thread and its messages (a run in progress is cancelled first)' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors({ NOT_FOUND: "unknown thread, or another owner's" })
  delete(@Param('threadId') id: string, @CurrentPrincipal() principal: Principal): Promise<void> {
    return this.threads.delete(id, principal);
  }

  /** The latest `limit` messages in chronological order; `before` pages back. */
  @Get(':threadId/messages')
  @ApiOperation({ summary: "Read a thread's messages, latest page first, oldest first within it" })
  @ApiOkResponse({ type: MessagesPage })
  @ApiErrors({
    VALIDATION_FAILED: 'limit outside 1-500, a bad cursor or format',
    NOT_FOUND: "unknown thread, or another owner's",
  })
  messages(
    @Param('threadId') id: string,
    @Query() query: ListMessagesQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<MessagesPage> {
    return this.threads.messages(id, query, principal);
  }
}
