import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConversationStore } from '../runs/conversation.store';
import { Run } from '../runs/run.entity';
import { RunEventsRepository } from '../runs/run-events.repository';
import { RunsRepository } from '../runs/runs.repository';
import { ToolCallsRepository } from '../runs/tool-calls.repository';
import { MessagesRepository } from '../threads/messages.repository';
import { ThreadsRepository } from '../threads/threads.repository';

const REPOSITORIES = [
  ThreadsRepository,
  MessagesRepository,
  RunsRepository,
  ToolCallsRepository,
  RunEventsRepository,
  ConversationStore,
];

/**
 * One repository per table, each in the feature folder named after it (`threads` → ThreadsRepository,
 * `messages` → MessagesRepository, `runs` → RunsRepository, `run_tool_calls` → ToolCallsRepository, `run_events` → RunEventsRepository),
 * and ConversationStore for the statements of a run that write several of them at once. Provided
 * together so the threads and runs features reach each other's tables without importing each other.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Run])],
  providers: REPOSITORIES,
  exports: REPOSITORIES,
})
export class RepositoriesModule {}
