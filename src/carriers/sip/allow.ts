import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

/**
 * Whose INVITEs are taken: loopback, the trunk's own addresses, and OPENLINE_SIP_ALLOW (addresses,
 * CIDR ranges, or `*` for anyone). Anything else is refused with 403 before it reaches an agent.
 */
export async function sourceGuard(
  allow: readonly string[],
  trunkHost: string | undefined,
): Promise<(address: string) => boolean> {
  if (allow.includes('*')) return () => true;
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addAddress('::1', 'ipv6');
  const add = (entry: string) => {
    const [address, bits] = entry.split('/');
    const family = isIP(address ?? '') === 6 ? 'ipv6' : 'ipv4';
    if (!address || !isIP(address)) return;
    if (bits === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(bits), family);
  };
  allow.forEach(add);
  if (trunkHost) {
    if (isIP(trunkHost)) add(trunkHost);
    else {
      // A trunk named by host name: the addresses it has now (a provider's signalling addresses).
      for (const { address } of await lookup(trunkHost, { all: true }).catch(() => [])) add(address);
    }
  }
  return (address) => {
    const plain = address.replace(/^::ffff:/, '');
    return list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  };
}
