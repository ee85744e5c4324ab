import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { ID_RULE, isId } from '../common/ids';

/** Who is calling: the owner scope every thread, message and run query is filtered by. */
export type Principal = {
  resourceId: string;
  /** ADMIN_ROLE holder: may read any owner's threads, messages and runs, and write only their own. */
  admin: boolean;
  /** An admin's read of another owner's thread list (`?resourceId=` or `X-Resource-Id` on a GET). */
  readAs?: string;
  /** AUTH_MODE=none and the request named no owner: a route naming a thread or run id finds it whoever owns it. */
  anyOwnerById?: boolean;
  /** AUTH_MODE=jwt: the token's REQUEST_CONTEXT_CLAIMS, for the agent (a run's request context `claims`). */
  claims?: Record<string, unknown>;
};

/**
 * The bearer token a principal was authenticated with (AUTH_MODE=jwt), kept beside it rather than
 * in it: a principal is logged and stored with its run, its token never is. Only `forwardAuth`
 * reads it (docs/agents.md#mcp-servers).
 */
const bearerTokens = new WeakMap<Principal, string>();

/** `principal`, remembered as authenticated by `token`. */
export function withBearerToken(principal: Principal, token: string): Principal {
  bearerTokens.set(principal, token);
  return principal;
}

export function bearerTokenOf(principal: Principal): string | undefined {
  return bearerTokens.get(principal);
}

/** Whose rows a repository method may reach: one owner's (a resourceId), or any owner's. */
export const ANY_OWNER: unique symbol = Symbol('any owner');
export type OwnerScope = string | typeof ANY_OWNER;

/** The scope as a SQL parameter, for `($n::text IS NULL OR resource_id = $n)`: null matches any owner. */
export const ownerParam = (scope: OwnerScope): string | null => (scope === ANY_OWNER ? null : scope);

/**
 * Whose thread or run a route that names its id reaches (docs/protocol.md#owners): any owner's on an
 * admin's read, or in AUTH_MODE=none when the request named no owner; the caller's own otherwise.
 */
export function idScope(principal: Principal, access: 'read' | 'write'): OwnerScope {
  const any = principal.anyOwnerById || (principal.admin && access === 'read');
  return any ? ANY_OWNER : principal.resourceId;
}

export const ANONYMOUS_RESOURCE = 'anonymous';

/** `%` and two hex digits: what percent-decoding turns into another character. */
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;

/**
 * What a resourceId may look like, whoever names it and in every AUTH_MODE: an id (common/ids.ts)
 * without a percent-escape, so that no owner is another's percent-encoded spelling (`%61lice` is not
 * a second `alice`) and decoding a header can never move a user onto another's data
 * (docs/identity-headers.md).
 */
export const isResourceId = (value: unknown): value is string => isId(value) && !PERCENT_ESCAPE.test(value);

export const RESOURCE_RULE = `${ID_RULE}, without a percent-escape (\`%\` and two hex digits, such as \`%41\`)`;

export type RequestWithPrincipal = { principal?: Principal };

/** The principal the PrincipalGuard resolved for this request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<RequestWithPrincipal>().principal;
  if (!principal) throw new Error('PrincipalGuard did not run for this route');
  return principal;
});
