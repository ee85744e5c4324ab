import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { RepositoriesModule } from '../database/repositories.module';
import { ThreadsController } from './threads.controller';
import { ThreadsService } from './threads.service';

@Module({
  imports: [AgentsModule, RepositoriesModule],
  controllers: [ThreadsController],
  providers: [ThreadsService],
})
export class ThreadsModule {}
