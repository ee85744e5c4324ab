import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors';
import { ANONYMOUS_RESOURCE, RequestWithPrincipal } from './principal';

type IncomingRequest = RequestWithPrincipal & {
  body?: unknown;
  query?: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
};

const RESOURCE_ID = /^[\x21-\x7E]{1,200}$/;

/**
 * AUTH_MODE=none (CONTRACT section 7): the owner is `forwardedProps.resourceId`, the `resourceId`
 * query parameter or `X-Resource-Id`, else `anonymous`. Resolved once per request.
 */
@Injectable()
export class PrincipalGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<IncomingRequest>();
    const fromBody = (req.body as { forwardedProps?: { resourceId?: unknown } } | undefined)?.forwardedProps
      ?.resourceId;
    const candidates: Array<[string, unknown]> = [
      ['forwardedProps.resourceId', fromBody],
      ['resourceId', req.query?.resourceId],
      ['x-resource-id', req.headers['x-resource-id']],
    ];
    for (const [path, value] of candidates) {
      if (value === undefined) continue;
      if (typeof value !== 'string' || !RESOURCE_ID.test(value)) {
        throw new DomainError('VALIDATION_FAILED', 'Invalid resourceId', [
          { path, message: 'must be 1-200 printable ASCII characters without spaces' },
        ]);
      }
      req.principal = { resourceId: value };
      return true;
    }
    req.principal = { resourceId: ANONYMOUS_RESOURCE };
    return true;
  }
}
