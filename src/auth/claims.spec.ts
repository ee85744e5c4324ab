import { claimAt, hasRole } from './claims';

describe('claimAt', () => {
  const payload = {
    sub: 'u1',
    realm_access: { roles: ['io-admin'] },
    'https://example.com/roles': ['ns-admin'],
    resource_access: { 'io-bridge': { roles: ['client-admin'] } },
  };

  it.each([
    ['sub', 'u1'],
    ['realm_access.roles', ['io-admin']],
    ['https://example.com/roles', ['ns-admin']],
    ['resource_access.io-bridge.roles', ['client-admin']],
  ])('reads %s', (name, expected) => {
    expect(claimAt(payload, name)).toEqual(expected);
  });

  it.each(['missing', 'realm_access.missing', 'sub.length', 'realm_access.roles.0.x', '', '.'])(
    '%j is undefined',
    (name) => {
      expect(claimAt(payload, name)).toBeUndefined();
    },
  );

  it.each([
    'constructor',
    '__proto__',
    'realm_access.constructor',
    'toString',
    'realm_access.hasOwnProperty',
  ])('never reads inherited properties (%s)', (name) => {
    expect(claimAt(payload, name)).toBeUndefined();
  });
});

describe('hasRole', () => {
  it.each([
    ['io-admin', true],
    [['user', 'io-admin'], true],
    [['user'], false],
    ['io-admin-2', false],
    [[['io-admin']], false],
    [{ 'io-admin': true }, false],
    [undefined, false],
    [null, false],
  ])('%j holds io-admin: %s', (claim, expected) => {
    expect(hasRole(claim, 'io-admin')).toBe(expected);
  });
});
