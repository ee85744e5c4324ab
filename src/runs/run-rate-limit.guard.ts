import { Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { RequestWithPrincipal } from '../auth/principal';

/** `POST /run` per owner (the principal the auth guard resolved), not per address: a proxy's users share one. */
@Injectable()
export class RunRateLimitGuard extends ThrottlerGuard {
  protected override getTracker(req: Record<string, any>): Promise<string> {
    const principal = (req as RequestWithPrincipal).principal;
    return Promise.resolve(principal ? `owner:${principal.resourceId}` : `ip:${String(req.ip)}`);
  }
}
