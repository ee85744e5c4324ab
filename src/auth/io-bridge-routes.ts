import { applyDecorators, UseFilters, UseGuards, UsePipes } from '@nestjs/common';
import { DomainErrorFilter } from '../common/error.filter';
import { RequestValidationPipe, SafeInputPipe } from '../common/safe-input';
import { PrincipalGuard } from './principal.guard';

/**
 * On every io-bridge controller: the caller found (PrincipalGuard), the input checked (SafeInputPipe,
 * then the DTOs' validation) and errors answered in io-bridge's envelope. On the controllers, not
 * the application, so that a host Nest app serving io-bridge keeps its own guards, pipes and filters
 * on its own routes (docs/agents.md#in-your-own-nest-app).
 */
export const IoBridgeRoutes = () =>
  applyDecorators(
    UseGuards(PrincipalGuard),
    UsePipes(SafeInputPipe, RequestValidationPipe),
    UseFilters(DomainErrorFilter),
  );
