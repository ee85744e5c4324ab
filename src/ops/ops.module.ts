import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DrainState } from './drain.service';
import { HttpHooks } from './http-hooks';
import { Metrics } from './metrics.service';
import { OpsController } from './ops.controller';

@Global()
@Module({
  imports: [TerminusModule.forRoot({ logger: false, errorLogStyle: 'pretty' })],
  controllers: [OpsController],
  providers: [DrainState, Metrics, HttpHooks],
  exports: [DrainState, Metrics],
})
export class OpsModule {}
