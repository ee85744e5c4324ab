import { Module } from '@nestjs/common';
import type { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { HOST_OPTIONS, type HostOptions } from '../config/host';
import { AgentsController } from './agents.controller';
import { AgentsService, BUILT_IN_AGENTS, MASTRA_PROJECT } from './agents.service';
import { builtInDefinitions } from './built-in-agents';
import { hostProjectOf, loadMastraProject } from './mastra-project';

@Module({
  controllers: [AgentsController],
  providers: [
    AgentsService,
    {
      // The team's Mastra instance (a host app's, or MASTRA_ENTRY's), loaded before any agent is
      // registered; null without one.
      provide: MASTRA_PROJECT,
      inject: [APP_CONFIG, HOST_OPTIONS],
      useFactory: (config: AppConfig, host: HostOptions) =>
        host.mastra
          ? hostProjectOf(host.mastra)
          : config.mastraEntry
            ? loadMastraProject(config.mastraEntry, config.database.url)
            : null,
    },
    // The built-in agents (src/mastra), served without a team's project.
    { provide: BUILT_IN_AGENTS, useFactory: () => builtInDefinitions() },
  ],
  exports: [AgentsService],
})
export class AgentsModule {}
