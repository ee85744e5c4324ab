import { Module } from '@nestjs/common';
import { AgentsModule } from '../../agents/agents.module';
import { RunPreparer } from './run-preparer';

/** A run request made into a prepared run: its agent, tools and settings (docs/architecture.md#the-parts-of-a-run). */
@Module({
  imports: [AgentsModule],
  providers: [RunPreparer],
  exports: [RunPreparer],
})
export class RunPrepareModule {}
