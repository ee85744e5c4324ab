import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentPrincipal, type Principal } from '../auth/principal';
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

@ApiTags('threads')
@Controller('threads')
export class ThreadsController {
  constructor(private readonly threads: ThreadsService) {}

  /** Creates a thread; the same id again by the same owner returns the existing one with 200. */
  @Post()
  @ApiCreatedResponse({ type: ThreadView })
  @ApiOkResponse({ type: ThreadView, description: 'The thread existed already' })
  @ApiConflictResponse({ description: 'THREAD_ID_CONFLICT' })
  async create(
    @Body() dto: CreateThreadDto,
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ThreadView> {
    const { thread, created } = await this.threads.create(dto, principal);
    void reply.status(created ? 201 : 200);
    return thread;
  }

  /** The owner's threads, newest `updatedAt` first. */
  @Get()
  @ApiOkResponse({ type: ThreadsPage })
  @ApiBadRequestResponse({ description: 'VALIDATION_FAILED: limit outside 1-100 or a bad cursor' })
  list(@Query() query: ListThreadsQueryDto, @CurrentPrincipal() principal: Principal): Promise<ThreadsPage> {
    return this.threads.list(query, principal);
  }

  @Get(':threadId')
  @ApiOkResponse({ type: ThreadView })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  get(@Param('threadId') id: string, @CurrentPrincipal() principal: Principal): Promise<ThreadView> {
    return this.threads.get(id, principal);
  }

  @Patch(':threadId')
  @ApiOkResponse({ type: ThreadView })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
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
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  delete(@Param('threadId') id: string, @CurrentPrincipal() principal: Principal): Promise<void> {
    return this.threads.delete(id, principal);
  }

  /** The latest `limit` messages in chronological order; `before` pages back. */
  @Get(':threadId/messages')
  @ApiOkResponse({ type: MessagesPage })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  messages(
    @Param('threadId') id: string,
    @Query() query: ListMessagesQueryDto,
    @CurrentPrincipal() principal: Principal,
  ): Promise<MessagesPage> {
    return this.threads.messages(id, query, principal);
  }
}
