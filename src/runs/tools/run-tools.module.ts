import { Module } from '@nestjs/common';
import { RunStorageModule } from '../storage/run-storage.module';
import { FrontendToolResults } from './frontend-tool-results';

/** Frontend tool results posted to any replica and awaited by the run (docs/architecture.md#the-parts-of-a-run). */
@Module({
  imports: [RunStorageModule],
  providers: [FrontendToolResults],
  exports: [FrontendToolResults],
})
export class RunToolsModule {}
