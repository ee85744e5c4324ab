const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A claim by name: the exact key first (Auth0's namespaced `https://example.com/roles` contains dots),
 * else a dotted path through nested objects (Keycloak's `realm_access.roles`). Own properties only.
 */
export function claimAt(payload: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(payload, name)) return payload[name];
  let node: unknown = payload;
  for (const key of name.split('.')) {
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** Whether a role claim (one string or an array of strings) holds `role`. */
export function hasRole(claim: unknown, role: string): boolean {
  if (typeof claim === 'string') return claim === role;
  return Array.isArray(claim) && claim.some((r) => r === role);
}
