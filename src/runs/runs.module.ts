import { Module } from '@nestjs/common';
import { FairShares } from '../common/fair-shares';
import { DurableRunsModule } from './durable/durable-runs.module';
import { RunEngineModule } from './engine/run-engine.module';
import { GracefulShutdown } from './graceful-shutdown';
import { RunPrepareModule } from './prepare/run-prepare.module';
import { RunRoute } from './run-route';
import { RunViews } from './run-views.service';
import { RunsController } from './runs.controller';
import { RunsService } from './runs.service';
import { RunStorageModule } from './storage/run-storage.module';
import { RunStreamsModule } from './stream/run-streams.module';
import { ThreadEventsController } from './thread-events.controller';
import { RunToolsModule } from './tools/run-tools.module';

/**
 * The run routes, on the parts of a run, each a module of its own whose imports go one way
 * (docs/architecture.md#the-parts-of-a-run): storage, prepare, stream, tools, engine, durable.
 */
@Module({
  imports: [
    RunStorageModule,
    RunPrepareModule,
    RunStreamsModule,
    RunToolsModule,
    RunEngineModule,
    DurableRunsModule,
  ],
  controllers: [RunsController, ThreadEventsController],
  providers: [RunsService, RunRoute, RunViews, GracefulShutdown, FairShares],
  exports: [GracefulShutdown],
})
export class RunsModule {}
