import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

/**
 * Whose INVITEs are taken for any number: loopback, the server trunk's own addresses, and
 * OPENLINE_SIP_ALLOW (addresses, CIDR ranges, or `*` for anyone). Others are taken only for the
 * numbers of an account's own trunk at that trunk's address (isTrunkAddress); anything else is
 * refused with 403 before it reaches an agent.
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
  if (trunkHost) (await hostAddresses(trunkHost)).forEach(add);
  return (address) => {
    const plain = plainAddress(address);
    return list.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  };
}

/** An IPv4 address as a dual-stack socket reports it (`::ffff:192.0.2.1`), as itself. */
const plainAddress = (address: string) => address.replace(/^::ffff:/, '');

/** A trunk's addresses: its IP address, or those its host name has now (a provider's signalling addresses). */
async function hostAddresses(host: string): Promise<string[]> {
  if (isIP(host)) return [host];
  return (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
}

/** Whether `address` is one of the trunk host's (an account's own trunk calling one of its numbers). */
export async function isTrunkAddress(trunkHost: string, address: string): Promise<boolean> {
  const plain = plainAddress(address);
  return (await hostAddresses(trunkHost)).some((a) => plainAddress(a) === plain);
}
