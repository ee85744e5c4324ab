import { BlockList, isIP } from 'node:net';
import { ConfigError } from '../config/config';

type Family = 'ipv4' | 'ipv6';

/** The family BlockList expects for an address, or undefined when it is not an IP address. */
function familyOf(address: string): Family | undefined {
  const version = isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : undefined;
}

/**
 * TRUSTED_PROXIES as a BlockList: each entry a CIDR (`10.0.0.0/8`, `fd00::/8`) or one address.
 * Throws a ConfigError naming the first bad entry, so the service refuses to boot.
 */
export function trustedProxyList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = familyOf(address);
    const bits = prefix === undefined ? undefined : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    const max = family === 'ipv4' ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && !(bits <= max))) {
      throw ConfigError.invalid([
        `TRUSTED_PROXIES: '${entry}' is not an IP address or CIDR such as 10.0.0.0/8`,
      ]);
    }
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, bits, family);
  }
  return list;
}

/** Whether a peer address is in the list; IPv4-mapped IPv6 (`::ffff:10.1.2.3`) matches IPv4 rules. */
export function isListed(list: BlockList, address: string | undefined): boolean {
  if (address === undefined) return false;
  const family = familyOf(address);
  return family !== undefined && list.check(address, family);
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether binding to `host` keeps the service reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  return host.toLowerCase() === 'localhost' || isListed(LOOPBACK, host);
}
