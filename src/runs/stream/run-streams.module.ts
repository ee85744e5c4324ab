import { Module } from '@nestjs/common';
import { ThreadsModule } from '../../threads/threads.module';
import { RunStorageModule } from '../storage/run-storage.module';
import { RunStreams } from './run-streams.service';
import { SseResponses } from './sse-responses';
import { ThreadStreams } from './thread-streams.service';

/** A run's events numbered, stored, then sent; rejoining a run, following a thread (docs/architecture.md#the-parts-of-a-run). */
@Module({
  imports: [ThreadsModule, RunStorageModule],
  providers: [RunStreams, ThreadStreams, SseResponses],
  exports: [RunStreams, ThreadStreams, SseResponses],
})
export class RunStreamsModule {}
