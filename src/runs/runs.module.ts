import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { RepositoriesModule } from '../database/repositories.module';
import { GracefulShutdown } from './graceful-shutdown';
import { RunLeases } from './run-leases';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';
import { FrontendToolBroker } from './frontend-tools.broker';

@Module({
  imports: [AgentsModule, RepositoriesModule],
  controllers: [RunsController],
  exports: [GracefulShutdown],
  providers: [GracefulShutdown, RunsService, FrontendToolBroker, RunLeases],
})
export class RunsModule {}
