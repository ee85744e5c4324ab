import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ThreadsModule } from '../../threads/threads.module';
import { ConversationStore } from './conversation.store';
import { InterruptsRepository } from './interrupts.repository';
import { LapsedRunsRepository } from './lapsed-runs.repository';
import { RunEventsRepository } from './run-events.repository';
import { RunQueueRepository } from './run-queue.repository';
import { Run } from './run.entity';
import { RunsRepository } from './runs.repository';
import { ToolCallsRepository } from './tool-calls.repository';

const REPOSITORIES = [
  RunsRepository,
  ConversationStore,
  RunEventsRepository,
  ToolCallsRepository,
  InterruptsRepository,
  RunQueueRepository,
  LapsedRunsRepository,
];

/** Runs in storage: every statement on the run tables (docs/architecture.md#the-parts-of-a-run). */
@Module({
  imports: [ThreadsModule, TypeOrmModule.forFeature([Run])],
  providers: REPOSITORIES,
  exports: REPOSITORIES,
})
export class RunStorageModule {}
