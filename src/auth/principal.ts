import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { ID_PATTERN } from '../common/ids';

/** Who is calling: the owner scope every thread, message and run query is filtered by. */
export type Principal = {
  resourceId: string;
  /** ADMIN_ROLE holder: may read any owner's threads, messages and runs, and write only their own. */
  admin: boolean;
  /** An admin's read of another owner's thread list (`?resourceId=` or `X-Resource-Id` on a GET). */
  readAs?: string;
};

export const ANONYMOUS_RESOURCE = 'anonymous';

/** What a resourceId may look like, whoever names it: an id (common/ids.ts). */
export const RESOURCE_ID = ID_PATTERN;

export type RequestWithPrincipal = { principal?: Principal };

/** The principal the PrincipalGuard resolved for this request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('PrincipalGuard did not run for this route');
  return principal;
});
