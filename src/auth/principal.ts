import { createParamDecorator, ExecutionContext } from '@nestjs/common';

/** Who is calling: the owner scope every thread, message and run query is filtered by. */
export type Principal = { resourceId: string };

export const ANONYMOUS_RESOURCE = 'anonymous';

export type RequestWithPrincipal = { principal?: Principal };

/** The principal the PrincipalGuard resolved for this request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('PrincipalGuard did not run for this route');
  return principal;
});
