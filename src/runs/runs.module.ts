import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { Run } from './run.entity';
import { RunsController } from './runs.controller';
import { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';
import { FrontendToolBroker } from './frontend-tools.broker';
import { ToolCallsRepository } from './tool-calls.repository';

@Module({
  imports: [TypeOrmModule.forFeature([Run]), AgentsModule],
  controllers: [RunsController],
  providers: [RunsService, RunsRepository, ToolCallsRepository, FrontendToolBroker],
})
export class RunsModule {}
