import type { TokenSource } from '@io-bridge/client';

/**
 * Who the page calls the API as: a bearer token (AUTH_MODE=jwt), pasted or from the OIDC sign-in
 * below (authorization code with PKCE), or an owner name sent as X-Resource-Id (AUTH_MODE=none).
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

/** The provider the page signs in with (AUTH_MODE=jwt with OIDC_CLIENT_ID), written into the page by the server. */
export type OidcSettings = { issuer: string; clientId: string };

export function oidcSettings(): OidcSettings | undefined {
  const content = document.querySelector('meta[name="io-bridge-oidc"]')?.getAttribute('content');
  if (!content) return undefined;
  try {
    return JSON.parse(content) as OidcSettings;
  } catch {
    return undefined;
  }
}

/** What the sign-in needs back from the provider's page: kept for the tab, used once. */
const PENDING = 'io-bridge.playground.oidc';
type Pending = { verifier: string; state: string; redirectUri: string; tokenEndpoint: string };

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = (size: number) => base64url(crypto.getRandomValues(new Uint8Array(size)));

/**
 * Goes to the provider's sign-in page: authorization code with PKCE (S256). Needs a secure context
 * (https, or localhost) for `crypto.subtle`.
 */
export async function startSignIn(oidc: OidcSettings): Promise<void> {
  if (!crypto.subtle) throw new Error('Signing in needs https (or localhost): paste a token instead');
  const res = await fetch(`${oidc.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
  if (!res.ok) throw new Error(`The provider's discovery answered ${res.status}`);
  const discovery = (await res.json()) as { authorization_endpoint: string; token_endpoint: string };
  const verifier = random(32);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  const pending: Pending = {
    verifier,
    state: random(16),
    redirectUri: `${location.origin}${location.pathname.replace(/\/?$/, '/')}`,
    tokenEndpoint: discovery.token_endpoint,
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(discovery.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: pending.redirectUri,
    scope: 'openid',
    state: pending.state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/** Back from the provider with a code: trades it (and the verifier) for an access token. True when signed in. */
export async function finishSignIn(oidc: OidcSettings): Promise<boolean> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const saved = sessionStorage.getItem(PENDING);
  if (!code && !params.get('error')) return false;
  sessionStorage.removeItem(PENDING);
  // The code is good once: off the address bar and the history.
  history.replaceState(null, '', location.pathname);
  if (!code) throw new Error(`The provider refused the sign-in: ${params.get('error')}`);
  if (!saved) throw new Error('This sign-in was not started from this tab: sign in again');
  const pending = JSON.parse(saved) as Pending;
  if (params.get('state') !== pending.state) throw new Error('The sign-in came back altered: sign in again');
  const res = await fetch(pending.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: pending.redirectUri,
      client_id: oidc.clientId,
      code_verifier: pending.verifier,
    }),
  });
  if (!res.ok) throw new Error(`The provider refused the sign-in (${res.status})`);
  const { access_token: token } = (await res.json()) as { access_token?: string };
  if (!token) throw new Error('The provider sent no access token');
  sessionStorage.setItem(TOKEN, token);
  return true;
}
