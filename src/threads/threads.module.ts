import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { MessagesRepository } from './messages.repository';
import { ThreadsController } from './threads.controller';
import { ThreadsRepository } from './threads.repository';
import { ThreadsService } from './threads.service';

/** Threads and their messages; the repositories are exported for the runs that append to them. */
@Module({
  imports: [AgentsModule],
  controllers: [ThreadsController],
  providers: [ThreadsService, ThreadsRepository, MessagesRepository],
  exports: [ThreadsRepository, MessagesRepository],
})
export class ThreadsModule {}
