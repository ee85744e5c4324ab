import { Module } from '@nestjs/common';
import { RunEngineModule } from '../engine/run-engine.module';
import { RunPrepareModule } from '../prepare/run-prepare.module';
import { RunStorageModule } from '../storage/run-storage.module';
import { RunStreamsModule } from '../stream/run-streams.module';
import { RunToolsModule } from '../tools/run-tools.module';
import { RunContinuations } from './run-continuations';
import { RunHandOver } from './run-hand-over';
import { RunReaper } from './run-reaper';

/** Runs that outlive their replica: reaped, continued, handed over (docs/durable-runs.md). */
@Module({
  imports: [RunStorageModule, RunPrepareModule, RunStreamsModule, RunToolsModule, RunEngineModule],
  providers: [RunReaper, RunContinuations, RunHandOver],
  exports: [RunHandOver],
})
export class DurableRunsModule {}
