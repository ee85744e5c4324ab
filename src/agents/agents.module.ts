import { Module } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { AgentsController } from './agents.controller';
import { AgentsService, MASTRA_PROJECT } from './agents.service';
import { loadMastraProject } from './mastra-project';

@Module({
  controllers: [AgentsController],
  providers: [
    AgentsService,
    {
      // The team's Mastra project (MASTRA_ENTRY), loaded before any agent is registered; null without one.
      provide: MASTRA_PROJECT,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) =>
        config.mastraEntry ? loadMastraProject(config.mastraEntry, config.database.url) : null,
    },
  ],
  exports: [AgentsService],
})
export class AgentsModule {}
