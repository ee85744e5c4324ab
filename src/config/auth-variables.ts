import { z } from 'zod';
import { bool, int, Variable } from './variable';

// Who the caller is: AUTH_MODE, then the variables of each mode, in docs/configuration.md's tables
// for AUTH_MODE=jwt and AUTH_MODE=header (their `table`).

/** AUTH_MODE and the settings of its `jwt` and `header` modes. */
export const AUTH_VARIABLES = {
  AUTH_MODE: {
    schema: z.enum(['none', 'jwt', 'header']).default('none'),
    at: 'auth.mode',
    doc: 'who the caller is: `none`, `jwt` or `header` (see [Authentication](#authentication))',
  },
  OIDC_ISSUER: {
    schema: z.url().optional(),
    at: 'auth.oidcIssuer',
    doc: 'expected `iss`; discovery reads `${OIDC_ISSUER}/.well-known/openid-configuration` once',
    unset: 'required',
    table: 'jwt',
  },
  OIDC_AUDIENCE: {
    schema: z.string().min(1).optional(),
    at: 'auth.oidcAudience',
    doc: "expected `aud` (the API's client id or identifier)",
    unset: 'required',
    table: 'jwt',
  },
  OIDC_JWKS_URI: {
    schema: z.url().optional(),
    at: 'auth.oidcJwksUri',
    doc: 'the JWKS URL, skipping discovery',
    unset: 'from discovery',
    table: 'jwt',
  },
  OIDC_CLIENT_ID: {
    schema: z.string().min(1).optional(),
    at: 'auth.oidcClientId',
    doc: 'the public client Swagger UI and the playground sign in with (authorization code with PKCE; its redirect URIs include `<service URL>/docs/oauth2-redirect.html` and `<service URL>/playground/`); unset, the playground offers no sign-in and Swagger UI asks for a client id',
    table: 'jwt',
  },
  RESOURCE_ID_CLAIM: {
    schema: z.string().min(1).default('sub'),
    at: 'auth.resourceIdClaim',
    doc: 'the claim that is the owner (`oid`, `preferred_username`, `email`…)',
    table: 'jwt',
  },
  REQUEST_CONTEXT_CLAIMS: {
    schema: z
      .string()
      .default('sub,name,email,preferred_username')
      .transform((list) =>
        list
          .split(',')
          .map((claim) => claim.trim())
          .filter(Boolean),
      ),
    at: 'auth.contextClaims',
    doc: "comma-separated claims (dotted paths allowed) of the caller's token put in every run's request context under `claims`, for agents whose instructions, model or tools depend on the user (see [Agents](agents.md#the-caller-in-the-request-context)); empty for none",
    table: 'jwt',
  },
  ADMIN_ROLE_CLAIM: {
    schema: z.string().min(1).default('roles'),
    at: 'auth.adminRoleClaim',
    doc: 'the claim holding roles: a string or an array; a dotted path such as `realm_access.roles` for Keycloak',
    table: 'jwt',
  },
  ADMIN_ROLE: {
    schema: z.string().min(1).optional(),
    at: 'auth.adminRole',
    doc: 'a token whose `ADMIN_ROLE_CLAIM` holds it is an operator',
    table: 'jwt',
  },
  JWT_CLOCK_TOLERANCE_S: {
    schema: int(0, 300).default(5),
    at: 'auth.clockToleranceS',
    doc: 'allowed clock skew for `exp` and `nbf`',
    table: 'jwt',
  },
  AUTH_HEADER: {
    schema: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .transform((header) => header.toLowerCase())
      .default('x-auth-request-user'),
    at: 'auth.header',
    doc: 'the header holding the user (oauth2-proxy with `--set-xauthrequest`); any case',
    table: 'header',
  },
  AUTH_HEADER_PERCENT_DECODING: {
    schema: bool.default(false),
    at: 'auth.headerPercentDecoding',
    doc: '`true` only when the proxy percent-encodes the user (`jos%C3%A9`): the header is then percent-decoded and a raw byte beyond ASCII is refused; `false`, the header is the user as sent, raw UTF-8 (`josé`). Either way a user with a percent-escape (`%41`) is refused (see [Owners named in headers](identity-headers.md))',
    table: 'header',
  },
  TRUSTED_PROXIES: {
    schema: z
      .string()
      .optional()
      .transform((list) =>
        (list ?? '')
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean),
      ),
    at: 'auth.trustedProxies',
    doc: 'comma-separated addresses or CIDRs of the proxies, IPv4 or IPv6 (`10.0.0.0/8,fd00::/8`); IPv4-mapped IPv6 peers match IPv4 entries',
    unset: 'required',
    table: 'header',
  },
} as const satisfies Record<string, Variable>;
