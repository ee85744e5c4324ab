import { loadConfig } from '../config/config';
import { openAccessWarning } from './auth.module';
import { JWT_ALGORITHMS } from './jwt-verifier';

describe('openAccessWarning', () => {
  it.each(['0.0.0.0', '::', '10.0.0.5', 'io-bridge.internal'])(
    'warns loudly for AUTH_MODE=none on HOST=%s',
    (host) => {
      expect(openAccessWarning(loadConfig({ HOST: host }))).toMatch(/^AUTHENTICATION IS OFF on HOST=/);
    },
  );

  it.each(['127.0.0.1', '::1', 'localhost'])('stays quiet for AUTH_MODE=none on HOST=%s', (host) => {
    expect(openAccessWarning(loadConfig({ HOST: host }))).toBeUndefined();
  });

  it('stays quiet when authentication is on', () => {
    const jwt = loadConfig({
      HOST: '0.0.0.0',
      AUTH_MODE: 'jwt',
      OIDC_ISSUER: 'https://idp.example.com',
      OIDC_AUDIENCE: 'io-bridge',
    });
    const header = loadConfig({ HOST: '0.0.0.0', AUTH_MODE: 'header', TRUSTED_PROXIES: '10.0.0.0/8' });
    expect(openAccessWarning(jwt)).toBeUndefined();
    expect(openAccessWarning(header)).toBeUndefined();
  });
});

describe('JWT_ALGORITHMS', () => {
  it('holds asymmetric signature algorithms only: no none, no HMAC', () => {
    expect(JWT_ALGORITHMS).toEqual(expect.arrayContaining(['RS256', 'ES256']));
    for (const alg of JWT_ALGORITHMS) expect(alg).toMatch(/^(RS|PS|ES)(256|384|512)$|^(EdDSA|Ed25519)$/);
  });
});
