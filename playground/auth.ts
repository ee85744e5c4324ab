import type { TokenSource } from '@io-bridge/client';

/**
 * Who the page calls the API as. Today a pasted bearer token (AUTH_MODE=jwt) or an owner name sent as
 * X-Resource-Id (AUTH_MODE=none). An OIDC sign-in (authorization code with PKCE) plugs in here: it
 * keeps its tokens and `credentials().token` returns a function giving the current access token.
 */
export type Credentials = { token?: TokenSource; owner?: string };

const TOKEN = 'io-bridge.playground.token';
const OWNER = 'io-bridge.playground.owner';

/** The token lives for the tab only (sessionStorage); the owner name is a preference (localStorage). */
export function credentials(): { token?: string; owner?: string } {
  return {
    token: sessionStorage.getItem(TOKEN) ?? undefined,
    owner: localStorage.getItem(OWNER) ?? undefined,
  };
}

export function saveCredentials({ token, owner }: { token: string; owner: string }): void {
  if (token) sessionStorage.setItem(TOKEN, token);
  else sessionStorage.removeItem(TOKEN);
  if (owner) localStorage.setItem(OWNER, owner);
  else localStorage.removeItem(OWNER);
}
