import { FairShares } from '../common/fair-shares';
import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { RepositoriesModule } from '../database/repositories.module';
import { GracefulShutdown } from './graceful-shutdown';
import { LiveRuns } from './live-runs';
import { MastraRunner } from './mastra-runner';
import { RunLeases } from './run-leases';
import { RunPreparer } from './run-preparer';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';
import { FrontendToolBroker } from './frontend-tools.broker';
import { RunStreams } from './run-streams.service';
import { StartsFirst } from './starts-first';
import { InterruptsRepository } from './interrupts.repository';

@Module({
  imports: [AgentsModule, RepositoriesModule],
  controllers: [RunsController],
  exports: [GracefulShutdown],
  providers: [
    GracefulShutdown,
    RunsService,
    RunPreparer,
    MastraRunner,
    LiveRuns,
    FrontendToolBroker,
    RunLeases,
    RunStreams,
    StartsFirst,
    InterruptsRepository,
    FairShares,
  ],
})
export class RunsModule {}
