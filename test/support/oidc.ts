import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { CryptoKey, exportJWK, exportSPKI, generateKeyPair, JWK, JWTPayload, SignJWT } from 'jose';

export type SignOptions = {
  kid?: string;
  issuer?: string;
  audience?: string;
  /** Seconds from now; negative for an expired token, null for none. Default 300. */
  expiresIn?: number | null;
  /** Seconds from now for `nbf`. */
  notBefore?: number;
};

const ISSUER_PATH = '/realms/test';
/** Who signs in through `/authorize`: the `sub` of the tokens the code flow hands out. */
export const SIGNED_IN_USER = 'signed-in-user';

type Key = { kid: string; alg: string; privateKey: CryptoKey; publicKey: CryptoKey; jwk: JWK };

/**
 * An OpenID provider for tests: discovery at `/.well-known/openid-configuration`, the JWKS at `/jwks`,
 * keys generated here, tokens signed here. Counts the fetches so caching can be asserted.
 */
export class TestIdp {
  readonly audience = 'io-bridge';
  readonly fetches = { discovery: 0, jwks: 0 };
  private readonly keys: Key[] = [];
  private readonly published = new Set<string>();
  /** Sign-ins by authorization code: what each asked, and whether its token request proved the PKCE verifier. */
  readonly signIns: Array<{ clientId: string; redirectUri: string; method: string; pkceProved?: boolean }> =
    [];
  private readonly codes = new Map<string, { challenge: string; signIn: TestIdp['signIns'][number] }>();
  private readonly server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    // A browser page of another origin (Swagger UI) reads discovery and posts to the token endpoint.
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', '*');
    const url = new URL(req.url ?? '/', this.origin);
    // Discovery lives under the issuer's path, as in Keycloak: `${issuer}/.well-known/openid-configuration`.
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
    } else if (url.pathname === `${ISSUER_PATH}/.well-known/openid-configuration`) {
      this.fetches.discovery++;
      res.end(
        JSON.stringify({
          issuer: this.issuer,
          jwks_uri: this.jwksUri,
          authorization_endpoint: `${this.origin}/authorize`,
          token_endpoint: `${this.origin}/token`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code'],
          code_challenge_methods_supported: ['S256'],
          scopes_supported: ['openid'],
        }),
      );
    } else if (url.pathname === '/authorize') {
      // Signs the user in at once (no login page) and sends the browser back with a code.
      const q = url.searchParams;
      const code = randomUUID();
      const signIn = {
        clientId: q.get('client_id') ?? '',
        redirectUri: q.get('redirect_uri') ?? '',
        method: q.get('code_challenge_method') ?? 'none',
      };
      this.signIns.push(signIn);
      this.codes.set(code, { challenge: q.get('code_challenge') ?? '', signIn });
      const back = new URL(signIn.redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state') ?? '');
      res.statusCode = 302;
      res.setHeader('location', back.toString());
      res.end();
    } else if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => void this.token(new URLSearchParams(body), res));
    } else if (req.url === '/jwks') {
      this.fetches.jwks++;
      res.end(JSON.stringify({ keys: this.keys.filter((k) => this.published.has(k.kid)).map((k) => k.jwk) }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  issuer = '';
  jwksUri = '';
  origin = 'http://127.0.0.1';

  /** The token endpoint: a code is good once, and only with the verifier whose S256 hash it was asked with. */
  private async token(form: URLSearchParams, res: import('node:http').ServerResponse): Promise<void> {
    const grant = this.codes.get(form.get('code') ?? '');
    this.codes.delete(form.get('code') ?? '');
    const verifier = form.get('code_verifier') ?? '';
    const proved =
      !!grant && !!verifier && createHash('sha256').update(verifier).digest('base64url') === grant.challenge;
    if (grant) grant.signIn.pkceProved = proved;
    if (!grant || !proved || form.get('grant_type') !== 'authorization_code') {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: 'invalid_grant' }));
      return;
    }
    const token = await this.sign({ sub: SIGNED_IN_USER });
    res.end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 300 }));
  }

  static async start(): Promise<TestIdp> {
    const idp = new TestIdp();
    await new Promise<void>((resolve) => idp.server.listen(0, '127.0.0.1', resolve));
    const { port } = idp.server.address() as AddressInfo;
    idp.origin = `http://127.0.0.1:${port}`;
    idp.issuer = `http://127.0.0.1:${port}${ISSUER_PATH}`;
    idp.jwksUri = `http://127.0.0.1:${port}/jwks`;
    await idp.addKey('RS256');
    return idp;
  }

  /** Generates a key; published on the JWKS unless `publish` is false. Returns its kid. */
  async addKey(alg: 'RS256' | 'ES256' = 'RS256', publish = true): Promise<string> {
    const kid = randomUUID();
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
    this.keys.push({ kid, alg, privateKey, publicKey, jwk });
    if (publish) this.published.add(kid);
    return kid;
  }

  /** A signed access token; the first key by default. */
  async sign(claims: JWTPayload, options: SignOptions = {}): Promise<string> {
    const key = options.kid ? this.key(options.kid) : this.keys[0];
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(options.issuer ?? this.issuer)
      .setAudience(options.audience ?? this.audience)
      .setIssuedAt(now);
    if (options.expiresIn !== null) jwt.setExpirationTime(now + (options.expiresIn ?? 300));
    if (options.notBefore !== undefined) jwt.setNotBefore(now + options.notBefore);
    return jwt.sign(key.privateKey);
  }

  /** The public key of a kid as PEM: what an HS256 forgery uses as its "secret". */
  publicPem(kid?: string): Promise<string> {
    return exportSPKI((kid ? this.key(kid) : this.keys[0]).publicKey);
  }

  get firstKid(): string {
    return this.keys[0].kid;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private key(kid: string): Key {
    const key = this.keys.find((k) => k.kid === kid);
    if (!key) throw new Error(`no key ${kid}`);
    return key;
  }
}
