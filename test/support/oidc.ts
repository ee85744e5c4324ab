import { randomUUID } from 'node:crypto';
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
  private readonly server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    // Discovery lives under the issuer's path, as in Keycloak: `${issuer}/.well-known/openid-configuration`.
    if (req.url === `${ISSUER_PATH}/.well-known/openid-configuration`) {
      this.fetches.discovery++;
      res.end(JSON.stringify({ issuer: this.issuer, jwks_uri: this.jwksUri }));
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

  static async start(): Promise<TestIdp> {
    const idp = new TestIdp();
    await new Promise<void>((resolve) => idp.server.listen(0, '127.0.0.1', resolve));
    const { port } = idp.server.address() as AddressInfo;
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
