import { FairShares } from '../common/fair-shares';
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { ThreadsModule } from '../threads/threads.module';
import { GracefulShutdown } from './graceful-shutdown';
import { LapsedRuns } from './durable/lapsed-runs';
import { RunContinuations } from './durable/run-continuations';
import { LiveRuns } from './engine/live-runs';
import { MastraRunner } from './engine/mastra-runner';
import { RunLeases } from './engine/run-leases';
import { BusyThreads } from './engine/busy-threads';
import { RunQueueRepository } from './storage/run-queue.repository';
import { RunPreparer } from './engine/run-preparer';
import { RunsController } from './runs.controller';
import { ThreadEventsController } from './thread-events.controller';
import { RunsService } from './runs.service';
import { FrontendToolBroker } from './tools/frontend-tools.broker';
import { RunStreams } from './stream/run-streams.service';
import { ThreadStreams } from './stream/thread-streams.service';
import { ConversationStore } from './storage/conversation.store';
import { InterruptsRepository } from './storage/interrupts.repository';
import { RunEventsRepository } from './storage/run-events.repository';
import { Run } from './storage/run.entity';
import { RunsRepository } from './storage/runs.repository';
import { ToolCallsRepository } from './storage/tool-calls.repository';

@Module({
  imports: [AgentsModule, ThreadsModule, TypeOrmModule.forFeature([Run])],
  controllers: [RunsController, ThreadEventsController],
  exports: [GracefulShutdown],
  providers: [
    GracefulShutdown,
    RunsService,
    RunPreparer,
    MastraRunner,
    LiveRuns,
    FrontendToolBroker,
    RunLeases,
    LapsedRuns,
    RunContinuations,
    BusyThreads,
    RunQueueRepository,
    RunStreams,
    ThreadStreams,
    RunsRepository,
    ConversationStore,
    RunEventsRepository,
    ToolCallsRepository,
    InterruptsRepository,
    FairShares,
  ],
})
export class RunsModule {}
