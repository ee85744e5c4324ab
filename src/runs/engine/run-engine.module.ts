import { Module } from '@nestjs/common';
import { ThreadsModule } from '../../threads/threads.module';
import { RunPrepareModule } from '../prepare/run-prepare.module';
import { RunStorageModule } from '../storage/run-storage.module';
import { RunStreamsModule } from '../stream/run-streams.module';
import { RunToolsModule } from '../tools/run-tools.module';
import { BusyThreads } from './busy-threads';
import { LiveRuns } from './live-runs';
import { MastraRunner } from './mastra-runner';
import { RunCancels } from './run-cancels';
import { RunFactory } from './run-factory';
import { RunLeases } from './run-leases';
import { RunParking } from './run-parking';
import { RunRecorder } from './run-record';

/** A run made and driven on this replica: the engine, its lease, its end (docs/architecture.md#the-parts-of-a-run). */
@Module({
  imports: [RunStorageModule, ThreadsModule, RunPrepareModule, RunStreamsModule, RunToolsModule],
  providers: [
    RunFactory,
    MastraRunner,
    LiveRuns,
    RunLeases,
    RunCancels,
    RunParking,
    RunRecorder,
    BusyThreads,
  ],
  exports: [RunFactory, LiveRuns, RunCancels, BusyThreads],
})
export class RunEngineModule {}
