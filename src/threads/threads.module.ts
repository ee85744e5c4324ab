import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { ThreadsController } from './threads.controller';
import { ThreadsRepository } from './threads.repository';
import { ThreadsService } from './threads.service';

@Module({
  imports: [AgentsModule],
  controllers: [ThreadsController],
  providers: [ThreadsService, ThreadsRepository],
  exports: [ThreadsRepository],
})
export class ThreadsModule {}
