import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { ThreadsModule } from '../threads/threads.module';
import { ConversationStore } from './conversation.store';
import { GracefulShutdown } from './graceful-shutdown';
import { RunLeases } from './run-leases';
import { Run } from './run.entity';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { FrontendToolBroker } from './frontend-tools.broker';
import { ToolCallsRepository } from './tool-calls.repository';
import { RunEventsRepository } from './run-events.repository';
import { RunStreams } from './run-streams.service';

@Module({
  imports: [TypeOrmModule.forFeature([Run]), AgentsModule, ThreadsModule],
  controllers: [RunsController],
  exports: [GracefulShutdown],
  providers: [
    GracefulShutdown,
    RunsService,
    RunsRepository,
    ToolCallsRepository,
    FrontendToolBroker,
    ConversationStore,
    RunLeases,
    RunEventsRepository,
    RunStreams,
  ],
})
export class RunsModule {}
