import { ConfigError } from '../config/config';
import { isListed, isLoopbackHost, trustedProxyList } from './addresses';

describe('trustedProxyList and isListed', () => {
  const list = trustedProxyList(['10.0.0.0/8', '192.168.1.7', 'fd00::/8', '2001:db8::1']);

  it.each([
    ['10.0.0.1', true],
    ['10.255.255.255', true],
    ['11.0.0.1', false],
    ['192.168.1.7', true],
    ['192.168.1.8', false],
    ['::ffff:10.1.2.3', true],
    ['::ffff:192.168.1.7', true],
    ['::ffff:127.0.0.1', false],
    ['fd12:3456::1', true],
    ['fe80::1', false],
    ['2001:db8::1', true],
    ['2001:db8::2', false],
    ['127.0.0.1', false],
    ['not-an-ip', false],
    ['', false],
    [undefined, false],
  ])('%s is listed: %s', (address, expected) => {
    expect(isListed(list, address)).toBe(expected);
  });

  it('an IPv4 CIDR matches the IPv4-mapped IPv6 form of its addresses', () => {
    const loopback = trustedProxyList(['127.0.0.0/8']);
    expect(isListed(loopback, '127.0.0.1')).toBe(true);
    expect(isListed(loopback, '::ffff:127.0.0.1')).toBe(true);
    expect(isListed(loopback, '::1')).toBe(false);
  });

  it('an empty list trusts nobody', () => {
    expect(isListed(trustedProxyList([]), '127.0.0.1')).toBe(false);
  });

  it.each([
    '10.0.0.0/33',
    '10.0.0.0/',
    '10.0.0.0/8/8',
    '10.0.0.0/-1',
    '10.0.0.0/x',
    '300.0.0.1',
    'proxy.local',
    '::/129',
  ])('refuses %s with a ConfigError naming TRUSTED_PROXIES', (entry) => {
    expect(() => trustedProxyList([entry])).toThrow(ConfigError);
    expect(() => trustedProxyList([entry])).toThrow(`TRUSTED_PROXIES: '${entry}'`);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1.2.3', true],
    ['::1', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['io-bridge.internal', false],
  ])('%s: %s', (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});
