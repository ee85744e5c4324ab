import { Controller, Get, Module, Req } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { IoBridgeModule } from 'io-bridge/nest';
import { EmployeeGuard, type Employee } from './employee.guard';
import { createMastra } from './mastra';

/** A route of the host's own, beside io-bridge's. */
@Controller('me')
class MeController {
  @Get()
  me(@Req() request: { employee: Employee }): Employee {
    return request.employee;
  }
}

const databaseUrl = process.env.DATABASE_URL!;

@Module({
  imports: [
    IoBridgeModule.forRoot({
      mastra: createMastra(databaseUrl),
      // The caller is the employee the host's guard found; their name reaches the agent.
      principal: (request) => {
        const { employee } = request as { employee?: Employee };
        return employee && { resourceId: employee.id, claims: { name: employee.name } };
      },
      env: { ...process.env, DATABASE_URL: databaseUrl },
    }),
  ],
  controllers: [MeController],
  providers: [{ provide: APP_GUARD, useClass: EmployeeGuard }],
})
export class AppModule {}
