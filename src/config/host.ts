/**
 * What a host Nest app gives io-bridge beside its configuration (`IoBridgeModule.forRoot`,
 * docs/agents.md#in-your-own-nest-app). The standalone service gives nothing: its agents come from
 * MASTRA_ENTRY or are the built-in ones, and its callers are found by AUTH_MODE.
 */
export type HostOptions = {
  /**
   * Who the caller is, from the request as the host's own guards left it (`request.user`, say):
   * their owner id, whether they may act for other owners, and the claims their agents see in the
   * request context. Undefined is a 401. Given, it replaces AUTH_MODE.
   */
  principal?: (request: unknown) => HostPrincipal | undefined | Promise<HostPrincipal | undefined>;
  /** The host's Mastra instance, whose agents are served (instead of MASTRA_ENTRY's or the built-in ones). */
  mastra?: { listAgents(): Record<string, unknown> };
};

export type HostPrincipal = { resourceId: string; admin?: boolean; claims?: Record<string, unknown> };

export const HOST_OPTIONS = Symbol('HOST_OPTIONS');

/** Which routes io-bridge's Fastify hooks are for: every route of the standalone service, or io-bridge's in a host app. */
export const HOOKED_ROUTES = Symbol('HOOKED_ROUTES');
export type HookedRoutes = 'all' | 'io-bridge';
